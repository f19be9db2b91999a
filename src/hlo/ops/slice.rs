//! Strided `slice`: output index `d` reads `start + d * stride`; from the input only the
//! strided range is mapped back, with a divisibility constraint.
//!
//! ```text
//! slice = f32[5, 3, 25] slice(p0), slice={[5:10:1], [3:20:7], [0:50:2]}
//! output → operand 0:  (d0, d1, d2) -> (d0 + 5, d1 * 7 + 3, d2 * 2)
//! operand 0 → output:  (d0, d1, d2) -> (d0 - 5, (d1 - 3) floordiv 7, d2 floordiv 2),
//!                      domain: d0 in [5, 9], d1 in [3, 17], d2 in [0, 48],
//!                      (d1 - 3) mod 7 in [0, 0], d2 mod 2 in [0, 0]
//! ```

use super::{attr, build, c, d, want_operands, want_out_dims, Cx, Family};
use crate::interval::Interval;
use crate::map::IndexingMap;

pub static FAMILY: Family = Family {
    name: "slice",
    check,
    out_to_in,
    in_to_out,
    approximate: None,
};

fn check(cx: &Cx) -> Result<(), String> {
    want_operands(cx, 1)?;
    let s = attr(&cx.instr.attrs.slice, "slice", "slice")?;
    let o = cx.opd(0);
    if s.len() != o.len() {
        return Err(format!(
            "slice={{...}} has {} entries but operand 0 has rank {}",
            s.len(),
            o.len()
        ));
    }
    let mut want = Vec::new();
    for (i, sd) in s.iter().enumerate() {
        if sd.start < 0 || sd.limit > o[i] || sd.start > sd.limit {
            return Err(format!(
                "slice [{}:{}] of dimension {i} is outside [0, {}] (the operand's size)",
                sd.start, sd.limit, o[i]
            ));
        }
        // `limit - start` fits (both in [0, size]); the ceiling division is done without
        // adding `stride - 1`, which could overflow for huge strides.
        let len = sd.limit - sd.start;
        want.push(len / sd.stride + i64::from(len % sd.stride != 0));
    }
    want_out_dims(cx, &want)
}

fn out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    let s = cx.instr.attrs.slice.as_deref().unwrap_or(&[]);
    let results = s
        .iter()
        .enumerate()
        .map(|(i, sd)| d(i).mul(c(sd.stride)).add(c(sd.start)))
        .collect();
    vec![build(cx.out(), &[], &[], results, vec![])]
}

fn in_to_out(cx: &Cx, _: usize) -> IndexingMap {
    let s = cx.instr.attrs.slice.as_deref().unwrap_or(&[]);
    let out = cx.out();
    let mut results = Vec::new();
    let mut constraints = Vec::new();
    for (i, sd) in s.iter().enumerate() {
        let shifted = d(i).sub(c(sd.start));
        results.push(shifted.floordiv(c(sd.stride)));
        if sd.stride > 1 {
            constraints.push((shifted.modulo(c(sd.stride)), Interval::point(0)));
        }
        // Only [start, start + (n - 1) * stride] reaches the output.
        let hi = sd.start + (out[i] - 1) * sd.stride;
        constraints.push((d(i), Interval::new(sd.start, hi)));
    }
    build(cx.opd(0), &[], &[], results, constraints)
}
