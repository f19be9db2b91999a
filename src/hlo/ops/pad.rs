//! `pad(operand, value), padding=lo_hi_interior x ...`: the inverse of a strided slice.
//! Output index `d` reads operand index `(d - lo) / (interior + 1)` where that division is
//! exact and in range; the padding value is read (at worst) by every output element.
//!
//! ```text
//! pad = f32[12, 16] pad(f32[4, 4] p0, f32[] p1), padding=1_4_1x4_8_0
//! output → operand 0:  (d0, d1) -> ((d0 - 1) floordiv 2, d1 - 4),
//!                      domain: d0 in [1, 7], d1 in [4, 7], (d0 - 1) mod 2 in [0, 0]
//! output → operand 1:  (d0, d1) -> ()      (an over-approximation: only the padding reads it)
//! ```

use super::{attr, build, c, d, want_operands, want_out_dims, Cx, Family};
use crate::interval::Interval;
use crate::map::IndexingMap;

pub static FAMILY: Family = Family {
    name: "pad",
    check,
    out_to_in,
    in_to_out,
    approximate: Some("the padding value's map covers every output element, not only the padding"),
};

fn check(cx: &Cx) -> Result<(), String> {
    want_operands(cx, 2)?;
    let p = attr(&cx.instr.attrs.padding, "padding", "pad")?;
    let o = cx.opd(0);
    if p.len() != o.len() {
        return Err(format!(
            "padding= has {} dimensions but operand 0 (`{}`) has rank {}",
            p.len(),
            cx.operand(0).name,
            o.len()
        ));
    }
    if !cx.opd(1).is_empty() {
        return Err(format!(
            "the padding value (`{}`) must be a scalar",
            cx.operand(1).name
        ));
    }
    let mut want = Vec::new();
    for (i, pd) in p.iter().enumerate() {
        let size = padded_size(o[i], pd).ok_or_else(|| {
            format!(
                "padding {}_{}_{} of dimension {i} (size {}) overflows 64-bit sizes",
                pd.lo, pd.hi, pd.interior, o[i]
            )
        })?;
        if size < 0 {
            return Err(format!("padding of dimension {i} leaves a negative size"));
        }
        want.push(size);
    }
    want_out_dims(cx, &want)
}

/// The padded size of a dimension of size `n`, with every quantity the maps use (the
/// step `interior + 1`, the negated edges, the last element's position) checked to fit.
fn padded_size(n: i64, pd: &crate::hlo::PadDim) -> Option<i64> {
    let step = pd.interior.checked_add(1)?;
    pd.lo.checked_neg()?;
    pd.hi.checked_neg()?;
    let inner = if n == 0 {
        0
    } else {
        (n - 1).checked_mul(step)?.checked_add(1)?
    };
    // Position of the last operand element in the output.
    pd.lo.checked_add(inner)?;
    pd.lo.checked_add(pd.hi)?.checked_add(inner)
}

fn out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    let p = cx.instr.attrs.padding.as_deref().unwrap_or(&[]);
    let out = cx.out();
    let o = cx.opd(0);
    let mut results = Vec::new();
    let mut constraints = Vec::new();
    for (i, pd) in p.iter().enumerate() {
        let step = pd.interior + 1;
        let shifted = d(i).sub(c(pd.lo));
        results.push(shifted.floordiv(c(step)));
        if step > 1 {
            constraints.push((shifted.modulo(c(step)), Interval::point(0)));
        }
        let hi = pd.lo + (o[i] - 1) * step;
        constraints.push((d(i), Interval::new(pd.lo.max(0), hi.min(out[i] - 1))));
    }
    vec![
        build(out, &[], &[], results, constraints),
        build(out, &[], &[], vec![], vec![]),
    ]
}

fn in_to_out(cx: &Cx, k: usize) -> IndexingMap {
    let p = cx.instr.attrs.padding.as_deref().unwrap_or(&[]);
    let out = cx.out();
    if k == 1 {
        return build(&[], out, &[], (0..out.len()).map(d).collect(), vec![]);
    }
    let o = cx.opd(0);
    let mut results = Vec::new();
    let mut constraints = Vec::new();
    for (i, pd) in p.iter().enumerate() {
        let r = d(i).mul(c(pd.interior + 1)).add(c(pd.lo));
        if pd.lo < 0 || pd.hi < 0 {
            // Negative padding drops operand elements at the edges.
            constraints.push((r, Interval::new(0, out[i] - 1)));
        }
        results.push(r);
    }
    build(o, &[], &[], results, constraints)
}
