//! `gather` in canonical form (XLA's gather_simplifier): the output is (batch dims...,
//! offset dims...); each row of `indices` holds start offsets for the operand dimensions
//! in `start_index_map`, and they become runtime variables (folded when computed from
//! constants and iota). The indices operand is read along its index vector dimension.
//!
//! ```text
//! gather = f32[1806,7,8,4] gather(f32[33,76,70] operand, s32[1806,2] indices),
//!   offset_dims={1,2,3}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={7,8,4}
//! output → operand:  (d0, d1, d2, d3){r0, r1} -> (d1 + r0, d2 + r1, d3), r0 in [0, 26], r1 in [0, 68]
//! output → indices:  (d0, d1, d2, d3)[s0] -> (d0, s0), s0 in [0, 1]
//! ```
//!
//! Input to output: from the indices exactly (a row is read by its batch position, at
//! every offset); from the operand with the start offsets as free runtime variables (an
//! over-approximation: which batch positions read an element depends on the index values).

use super::{attr, build, c, d, want_dim_list, want_operands, want_out_dims, Cx, Family};
use crate::expr::Expr;
use crate::hlo::{rtvar, GatherDims};
use crate::interval::Interval;
use crate::map::IndexingMap;

pub static FAMILY: Family = Family {
    name: "gather",
    check,
    out_to_in,
    in_to_out,
    approximate: Some(
        "from the operand, the input-to-output map covers every batch position and start",
    ),
};

fn dims(cx: &Cx) -> GatherDims {
    cx.instr.attrs.gather.clone().unwrap_or_default()
}

fn check(cx: &Cx) -> Result<(), String> {
    want_operands(cx, 2)?;
    super::refuse_batching(
        cx,
        &["operand_batching_dims", "start_indices_batching_dims"],
    )?;
    let g = attr(&cx.instr.attrs.gather, "offset_dims", "gather")?;
    let (op, ix, out) = (cx.opd(0), cx.opd(1), cx.out());
    if g.slice_sizes.len() != op.len() {
        return Err(format!(
            "slice_sizes has {} entries but the operand has rank {}",
            g.slice_sizes.len(),
            op.len()
        ));
    }
    want_dim_list("collapsed_slice_dims", &g.collapsed_slice_dims, op.len())?;
    want_dim_list("start_index_map", &g.start_index_map, op.len())?;
    want_dim_list("offset_dims", &g.offset_dims, out.len())?;
    let ivd = g.index_vector_dim;
    if ivd < 0 || ivd as usize > ix.len() {
        return Err(format!(
            "index_vector_dim={ivd} is not a dimension of the indices (rank {})",
            ix.len()
        ));
    }
    let nvec = if (ivd as usize) < ix.len() {
        ix[ivd as usize]
    } else {
        1
    };
    if nvec != g.start_index_map.len() as i64 {
        return Err(format!(
            "the index vector has {nvec} entries but start_index_map has {}",
            g.start_index_map.len()
        ));
    }
    for &k in &g.collapsed_slice_dims {
        if g.slice_sizes[k as usize] != 1 {
            return Err(format!("collapsed dimension {k} needs slice size 1"));
        }
    }
    for (i, (&s, &n)) in g.slice_sizes.iter().zip(op).enumerate() {
        if s < 0 || s > n {
            return Err(format!(
                "slice size {s} of dimension {i} exceeds the operand's size {n}"
            ));
        }
    }
    let offsets: Vec<i64> = (0..op.len())
        .filter(|k| !g.collapsed_slice_dims.contains(&(*k as i64)))
        .map(|k| g.slice_sizes[k])
        .collect();
    let batch: Vec<i64> = (0..ix.len())
        .filter(|&k| k as i64 != ivd)
        .map(|k| ix[k])
        .collect();
    if offsets.len() != g.offset_dims.len() || batch.len() + offsets.len() != out.len() {
        return Err("offset_dims and the batch dimensions do not add up to the output rank".into());
    }
    let mut want = vec![0i64; out.len()];
    let mut bi = batch.iter();
    let mut oi = offsets.iter();
    for (j, w) in want.iter_mut().enumerate() {
        *w = if g.offset_dims.contains(&(j as i64)) {
            *oi.next().unwrap_or(&0)
        } else {
            *bi.next().unwrap_or(&0)
        };
    }
    want_out_dims(cx, &want)
}

fn out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    out_to_in_noted(cx, &mut Vec::new())
}

/// What [`out_to_in`] folded by gather's clamping of its start indices (issue 32, item 9):
/// one line per start index that is a constant outside its bounds.
pub fn clamp_notes(cx: &Cx) -> Vec<String> {
    let mut notes = Vec::new();
    out_to_in_noted(cx, &mut notes);
    notes
}

fn out_to_in_noted(cx: &Cx, notes: &mut Vec<String>) -> Vec<IndexingMap> {
    let g = dims(cx);
    let (op, ix, out) = (cx.opd(0), cx.opd(1), cx.out());
    let ivd = g.index_vector_dim as usize;
    let batch_out: Vec<usize> = (0..out.len())
        .filter(|j| !g.offset_dims.contains(&(*j as i64)))
        .collect();
    let offset_out: Vec<usize> = (0..out.len())
        .filter(|j| g.offset_dims.contains(&(*j as i64)))
        .collect();
    // Indices element read for entry `j` of the index vector: batch dims in order, j at ivd.
    let index_of = |j: i64| -> Vec<Expr> {
        let mut v = Vec::new();
        let mut b = batch_out.iter();
        for k in 0..ix.len() {
            v.push(if k == ivd {
                c(j)
            } else {
                d(*b.next().unwrap_or(&0))
            });
        }
        v
    };
    let dim_bounds: Vec<Interval> = out.iter().map(|&n| Interval::new(0, n - 1)).collect();
    let mut rts = Vec::new();
    let mut constraints = Vec::new();
    let mut results = Vec::new();
    let mut next_offset = offset_out.iter();
    for k in 0..op.len() {
        let base = if g.collapsed_slice_dims.contains(&(k as i64)) {
            c(0)
        } else {
            d(*next_offset.next().unwrap_or(&0))
        };
        let start = match g.start_index_map.iter().position(|&x| x as usize == k) {
            Some(j) => {
                let bounds = Interval::new(0, op[k] - g.slice_sizes[k]);
                let s = rtvar::start_index(
                    cx.comp,
                    cx.instr.operands[1],
                    &index_of(j as i64),
                    &dim_bounds,
                    bounds,
                    rtvar::OutOfRange::Clamp(rtvar::GATHER_CLAMPS),
                    (out.len() + rts.len()) as u32,
                    &format!("start index {j} (`{}`)", cx.operand(1).name),
                );
                notes.extend(s.note);
                rts.extend(s.runtime);
                constraints.extend(s.constraints);
                s.expr
            }
            None => c(0),
        };
        results.push(base.add(start));
    }
    let operand_map = build(out, &[], &rts, results, constraints);
    let mut ix_results = Vec::new();
    let mut ranges = Vec::new();
    let mut b = batch_out.iter();
    for k in 0..ix.len() {
        if k == ivd {
            ix_results.push(Expr::var(out.len() as u32));
            ranges.push(ix[k]);
        } else {
            ix_results.push(d(*b.next().unwrap_or(&0)));
        }
    }
    vec![operand_map, build(out, &ranges, &[], ix_results, vec![])]
}

/// From the indices (exact): an element of index row `b` is read by every output element
/// of batch position `b`, whatever its offsets. From the operand (an over-approximation):
/// operand index `x` lands at offset `x - start` of any batch position, for a start (a
/// runtime variable, clamped into bounds as XLA clamps it) with `0 <= x - start < size`.
fn in_to_out(cx: &Cx, k: usize) -> IndexingMap {
    let g = dims(cx);
    let (op, ix, out) = (cx.opd(0), cx.opd(1), cx.out());
    let ivd = g.index_vector_dim as usize;
    let offset_out: Vec<usize> = (0..out.len())
        .filter(|j| g.offset_dims.contains(&(*j as i64)))
        .collect();
    let batch_out: Vec<usize> = (0..out.len())
        .filter(|j| !g.offset_dims.contains(&(*j as i64)))
        .collect();
    let mut results = vec![c(0); out.len()];
    if k == 1 {
        let batch_ix: Vec<usize> = (0..ix.len()).filter(|&q| q != ivd).collect();
        for (t, &j) in batch_out.iter().enumerate() {
            results[j] = d(batch_ix.get(t).copied().unwrap_or(0));
        }
        let ranges: Vec<i64> = offset_out.iter().map(|&j| out[j]).collect();
        for (t, &j) in offset_out.iter().enumerate() {
            results[j] = Expr::var((ix.len() + t) as u32);
        }
        return build(ix, &ranges, &[], results, vec![]);
    }
    let n = op.len();
    let ranges: Vec<i64> = batch_out.iter().map(|&j| out[j]).collect();
    for (t, &j) in batch_out.iter().enumerate() {
        results[j] = Expr::var((n + t) as u32);
    }
    let mut rts = Vec::new();
    let mut constraints = Vec::new();
    let mut next_offset = offset_out.iter();
    for q in 0..n {
        let size = g.slice_sizes[q];
        let start = if g.start_index_map.contains(&(q as i64)) {
            rts.push(Interval::new(0, op[q] - size));
            Expr::var((n + ranges.len() + rts.len() - 1) as u32)
        } else {
            c(0)
        };
        let off = d(q).sub(start);
        constraints.push((off, Interval::new(0, size - 1)));
        if !g.collapsed_slice_dims.contains(&(q as i64)) {
            if let Some(&j) = next_offset.next() {
                results[j] = off;
            }
        }
    }
    build(op, &ranges, &rts, results, constraints)
}
