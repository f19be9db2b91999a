//! `dynamic-slice` and `dynamic-update-slice`: the offsets are runtime variables whose
//! ranges keep the whole slice in bounds (XLA clamps offsets into them). An offset
//! computed from constants, iota and integer arithmetic is folded into its expression, and
//! one that is such a part plus or minus a value known only at run time keeps a runtime
//! variable re-pointed at that value ([`crate::hlo::rtvar`]).
//!
//! ```text
//! ds = s32[1, 2, 32] dynamic-slice(s32[2, 2, 258] src, of1, of2, of3), dynamic_slice_sizes={1, 2, 32}
//! output → src:  (d0, d1, d2){r0, r1, r2} -> (d0 + r0, d1 + r1, d2 + r2),
//!                domain: ..., r0 in [0, 1], r1 in [0, 0], r2 in [0, 226]
//! output → of1:  (d0, d1, d2) -> ()
//!
//! dus = s32[20,30] dynamic-update-slice(src, s32[5,10] upd, of1, of2)
//! output → src:  (d0, d1) -> (d0, d1)                 (over-approximation)
//! output → upd:  (d0, d1){r0, r1} -> (d0 - r0, d1 - r1), r0 in [0, 15], r1 in [0, 20]
//! ```

use super::{build, c, d, want_operands, want_out_dims, Cx, Family};
use crate::expr::Expr;
use crate::hlo::rtvar;
use crate::interval::Interval;
use crate::map::IndexingMap;

pub static DYNAMIC_SLICE: Family = Family {
    name: "dynamic-slice",
    check: check_ds,
    out_to_in: ds_out_to_in,
    in_to_out: ds_in_to_out,
    approximate: None,
};

pub static DYNAMIC_UPDATE_SLICE: Family = Family {
    name: "dynamic-update-slice",
    check: check_dus,
    out_to_in: dus_out_to_in,
    in_to_out: dus_in_to_out,
    approximate: Some(
        "output → operand 0 is the identity everywhere (also where the update overwrites); the update's map has no in-bounds constraint",
    ),
};

fn check_offsets(cx: &Cx, first: usize, rank: usize) -> Result<(), String> {
    if cx.n_operands() != first + rank {
        return Err(format!(
            "`{}` takes {} operands ({} offsets for rank {rank}), found {}",
            cx.instr.opcode,
            first + rank,
            rank,
            cx.n_operands()
        ));
    }
    for k in first..cx.n_operands() {
        if !cx.opd(k).is_empty() {
            return Err(format!(
                "offset operand {k} (`{}`) must be a scalar",
                cx.operand(k).name
            ));
        }
    }
    Ok(())
}

fn check_ds(cx: &Cx) -> Result<(), String> {
    if cx.n_operands() == 0 {
        return want_operands(cx, 1);
    }
    let src = cx.opd(0);
    check_offsets(cx, 1, src.len())?;
    let sizes = cx
        .instr
        .attrs
        .dynamic_slice_sizes
        .clone()
        .unwrap_or_else(|| cx.out().to_vec());
    if sizes.len() != src.len() {
        return Err(format!(
            "dynamic_slice_sizes has {} entries but operand 0 has rank {}",
            sizes.len(),
            src.len()
        ));
    }
    for (i, (&s, &n)) in sizes.iter().zip(src).enumerate() {
        if s < 0 || s > n {
            return Err(format!(
                "slice size {s} of dimension {i} exceeds the operand's size {n}"
            ));
        }
    }
    want_out_dims(cx, &sizes)
}

fn check_dus(cx: &Cx) -> Result<(), String> {
    if cx.n_operands() < 2 {
        return want_operands(cx, 2);
    }
    let (src, upd) = (cx.opd(0), cx.opd(1));
    if upd.len() != src.len() {
        return Err(format!(
            "the update (`{}`) has rank {} but operand 0 has rank {}",
            cx.operand(1).name,
            upd.len(),
            src.len()
        ));
    }
    check_offsets(cx, 2, src.len())?;
    if upd.iter().zip(src).any(|(u, s)| u > s) {
        return Err(format!(
            "the update {} does not fit in {}",
            cx.operand(1).shape,
            cx.operand(0).shape
        ));
    }
    want_out_dims(cx, src)
}

/// The start indices as they enter a map: their expressions (folded, re-pointed or a new
/// runtime variable, numbered from variable `first_var`), the runtime variables' bounds and
/// the constraints re-pointing adds.
struct Offsets {
    exprs: Vec<Expr>,
    rts: Vec<Interval>,
    constraints: Vec<(Expr, Interval)>,
}

/// Offset `i` (operand `first + i`) into `[0, max[i]]`, read by a map over a box of `dims`.
fn offsets(cx: &Cx, first: usize, max: &[i64], dims: &[i64], first_var: usize) -> Offsets {
    offsets_noted(cx, first, max, dims, first_var, &mut Vec::new())
}

/// What the offsets fold by the op's clamping of its start indices (issue 32, item 9) and
/// where a runtime variable was re-pointed at the part of its start that remains (item 5):
/// one line per such start index.
pub fn clamp_notes(cx: &Cx) -> Vec<String> {
    let (first, small) = if cx.instr.opcode == "dynamic-slice" {
        (1, cx.out().to_vec())
    } else {
        (2, cx.opd(1).to_vec())
    };
    let big = if first == 1 { cx.opd(0) } else { cx.out() };
    let max: Vec<i64> = big.iter().zip(&small).map(|(n, s)| n - s).collect();
    let mut notes = Vec::new();
    offsets_noted(cx, first, &max, &small, 0, &mut notes);
    notes
}

fn offsets_noted(
    cx: &Cx,
    first: usize,
    max: &[i64],
    dims: &[i64],
    first_var: usize,
    notes: &mut Vec<String>,
) -> Offsets {
    let mut o = Offsets {
        exprs: Vec::new(),
        rts: Vec::new(),
        constraints: Vec::new(),
    };
    let dim_bounds: Vec<Interval> = dims.iter().map(|&n| Interval::new(0, n - 1)).collect();
    for (i, &hi) in max.iter().enumerate() {
        let bounds = Interval::new(0, hi);
        // Both ops clamp their start indices: a constant outside is folded clamped.
        let rule = if first == 1 {
            rtvar::OutOfRange::Clamp(rtvar::DYNAMIC_SLICE_CLAMPS)
        } else {
            rtvar::OutOfRange::Clamp(rtvar::DYNAMIC_UPDATE_SLICE_CLAMPS)
        };
        let s = rtvar::start_index(
            cx.comp,
            cx.instr.operands[first + i],
            &[],
            &dim_bounds,
            bounds,
            rule,
            (first_var + o.rts.len()) as u32,
            &format!("start index {i} (`{}`)", cx.operand(first + i).name),
        );
        notes.extend(s.note);
        o.exprs.push(s.expr);
        o.rts.extend(s.runtime);
        o.constraints.extend(s.constraints);
    }
    o
}

fn ds_out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    let out = cx.out();
    let src = cx.opd(0);
    let max: Vec<i64> = src.iter().zip(out).map(|(n, s)| n - s).collect();
    let off = offsets(cx, 1, &max, out, out.len());
    let results = (0..out.len()).map(|i| d(i).add(off.exprs[i])).collect();
    let mut v = vec![build(out, &[], &off.rts, results, off.constraints)];
    v.extend((1..cx.n_operands()).map(|_| build(out, &[], &[], vec![], vec![])));
    v
}

fn ds_in_to_out(cx: &Cx, k: usize) -> IndexingMap {
    let out = cx.out();
    if k > 0 {
        return build(&[], out, &[], (0..out.len()).map(d).collect(), vec![]);
    }
    let src = cx.opd(0);
    let max: Vec<i64> = src.iter().zip(out).map(|(n, s)| n - s).collect();
    let off = offsets(cx, 1, &max, &[], src.len());
    let mut results = Vec::new();
    let mut constraints = off.constraints;
    for i in 0..src.len() {
        let r = d(i).sub(off.exprs[i]);
        constraints.push((r, Interval::new(0, out[i] - 1)));
        results.push(r);
    }
    build(src, &[], &off.rts, results, constraints)
}

fn dus_out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    let out = cx.out();
    let upd = cx.opd(1);
    let max: Vec<i64> = out.iter().zip(upd).map(|(n, s)| n - s).collect();
    let off = offsets(cx, 2, &max, out, out.len());
    let results = (0..out.len()).map(|i| d(i).sub(off.exprs[i])).collect();
    let mut v = vec![
        build(out, &[], &[], (0..out.len()).map(d).collect(), vec![]),
        build(out, &[], &off.rts, results, off.constraints),
    ];
    v.extend((2..cx.n_operands()).map(|_| build(out, &[], &[], vec![], vec![])));
    v
}

fn dus_in_to_out(cx: &Cx, k: usize) -> IndexingMap {
    let out = cx.out();
    match k {
        0 => build(out, &[], &[], (0..out.len()).map(d).collect(), vec![]),
        1 => {
            let upd = cx.opd(1);
            let max: Vec<i64> = out.iter().zip(upd).map(|(n, s)| n - s).collect();
            let off = offsets(cx, 2, &max, &[], upd.len());
            let results = (0..upd.len()).map(|i| d(i).add(off.exprs[i])).collect();
            build(upd, &[], &off.rts, results, off.constraints)
        }
        _ => build(&[], out, &[], (0..out.len()).map(d).collect(), vec![]),
    }
}

#[allow(dead_code)]
fn zero() -> Expr {
    c(0)
}
