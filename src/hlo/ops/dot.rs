//! `dot`: the output is (batch dims, lhs free dims, rhs free dims); each operand's
//! contracting dimensions become range variables.
//!
//! ```text
//! output = f32[4, 128, 64] dot(f32[4,128,256] p0, f32[4,256,64] p1),
//!          lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
//! output → operand 0:  (d0, d1, d2)[s0] -> (d0, d1, s0), s0 in [0, 255]
//! output → operand 1:  (d0, d1, d2)[s0] -> (d0, s0, d2)
//! operand 0 → output:  (d0, d1, d2)[s0] -> (d0, d1, s0), s0 in [0, 63]   (the rhs free dim)
//! operand 1 → output:  (d0, d1, d2)[s0] -> (d0, s0, d2), s0 in [0, 127]  (the lhs free dim)
//! ```
//!
//! `scaled-dot(lhs, rhs, lhs_scale, rhs_scale)` (issue 32, item 7) computes
//! `(lhs · lhs_scale) @ (rhs · rhs_scale)`: each scale has its operand's rank, and each of
//! its dimensions divides the operand's, in blocks (`K / K_s` elements of the contracting
//! dimension share a scale; a size-1 scale dimension is one scale for all). Its maps are
//! the operand's with each index divided by the block:
//!
//! ```text
//! f32[32, 16] scaled-dot(f8[32, 256] lhs, f8[16, 256] rhs, f8[32, 8] ls, f8[16, 8] rs),
//!   lhs_contracting_dims={1}, rhs_contracting_dims={1}
//! output → lhs_scale:  (d0, d1)[s0] -> (d0, s0 floordiv 32), s0 in [0, 255]
//! ```

use super::{attr, build, d, want_dim_list, want_operands, want_out_dims, Cx, Family};
use crate::expr::Expr;
use crate::map::IndexingMap;

pub static FAMILY: Family = Family {
    name: "dot",
    check,
    out_to_in,
    in_to_out,
    approximate: None,
};

pub static SCALED: Family = Family {
    name: "scaled-dot",
    check: check_scaled,
    out_to_in: scaled_out_to_in,
    in_to_out: scaled_in_to_out,
    approximate: None,
};

/// The block of each dimension of operand `side`'s scale (operand `2 + side`).
fn blocks(cx: &Cx, side: usize) -> Vec<i64> {
    cx.opd(side)
        .iter()
        .zip(cx.opd(2 + side))
        .map(|(&n, &s)| if s > 0 { n / s } else { 1 })
        .collect()
}

fn check_scaled(cx: &Cx) -> Result<(), String> {
    want_operands(cx, 4)?;
    check_dot(cx)?;
    for side in 0..2 {
        let (o, sc) = (cx.opd(side), cx.opd(2 + side));
        let which = ["lhs", "rhs"][side];
        if sc.len() != o.len() {
            return Err(format!(
                "the {which} scale (operand {}) has rank {} but the {which} has rank {}",
                2 + side,
                sc.len(),
                o.len()
            ));
        }
        for (i, (&n, &s)) in o.iter().zip(sc).enumerate() {
            if s < 1 || n % s != 0 {
                return Err(format!(
                    "dimension {i} of the {which} scale (size {s}) must divide the {which}'s (size {n}): each scale covers a block of {which} elements"
                ));
            }
        }
    }
    Ok(())
}

/// Operand `side`'s map with each index divided by its scale's block.
fn scale_map(cx: &Cx, side: usize, m: IndexingMap) -> IndexingMap {
    let b = blocks(cx, side);
    let results = m
        .results
        .iter()
        .zip(&b)
        .map(|(&r, &k)| {
            if k == 1 {
                r
            } else {
                r.floordiv(Expr::constant(k))
            }
        })
        .collect();
    IndexingMap::new(m.dims, m.ranges, m.runtimes, results, m.constraints)
}

fn scaled_out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    let (l, r) = (side_map(cx, 0), side_map(cx, 1));
    vec![
        l.clone(),
        r.clone(),
        scale_map(cx, 0, l),
        scale_map(cx, 1, r),
    ]
}

fn scaled_in_to_out(cx: &Cx, k: usize) -> IndexingMap {
    if k < 2 {
        return in_to_out(cx, k);
    }
    // A scale element covers its block of the operand: (j)[b] -> (j * B + b), then the
    // operand's map to the output.
    let side = k - 2;
    let b = blocks(cx, side);
    let sc = cx.opd(k);
    let mut ranges = Vec::new();
    let mut results = Vec::new();
    for (i, &blk) in b.iter().enumerate() {
        if blk == 1 {
            results.push(d(i));
        } else {
            let v = Expr::var((sc.len() + ranges.len()) as u32);
            results.push(d(i).mul(Expr::constant(blk)).add(v));
            ranges.push(blk);
        }
    }
    let cover = build(sc, &ranges, &[], results, vec![]);
    crate::map::compose(&cover, &in_to_out(cx, side)).unwrap_or_else(|_| IndexingMap::undefined())
}

fn pos(list: &[i64], i: usize) -> Option<usize> {
    list.iter().position(|&x| x as usize == i)
}

fn free(rank: usize, batch: &[i64], contracting: &[i64]) -> Vec<usize> {
    (0..rank)
        .filter(|&i| pos(batch, i).is_none() && pos(contracting, i).is_none())
        .collect()
}

fn check(cx: &Cx) -> Result<(), String> {
    want_operands(cx, 2)?;
    check_dot(cx)
}

/// A dot's checks on operands 0 and 1 (also a scaled dot's).
fn check_dot(cx: &Cx) -> Result<(), String> {
    let dd = attr(&cx.instr.attrs.dot, "lhs_contracting_dims", "dot")?;
    let (l, r) = (cx.opd(0), cx.opd(1));
    want_dim_list(
        "lhs_batch_dims + lhs_contracting_dims",
        &[dd.lhs_batch.clone(), dd.lhs_contracting.clone()].concat(),
        l.len(),
    )?;
    want_dim_list(
        "rhs_batch_dims + rhs_contracting_dims",
        &[dd.rhs_batch.clone(), dd.rhs_contracting.clone()].concat(),
        r.len(),
    )?;
    if dd.lhs_batch.len() != dd.rhs_batch.len()
        || dd.lhs_contracting.len() != dd.rhs_contracting.len()
    {
        return Err("lhs and rhs need as many batch and contracting dimensions".into());
    }
    for (a, b) in dd
        .lhs_batch
        .iter()
        .zip(&dd.rhs_batch)
        .chain(dd.lhs_contracting.iter().zip(&dd.rhs_contracting))
    {
        if l[*a as usize] != r[*b as usize] {
            return Err(format!(
                "lhs dimension {a} (size {}) and rhs dimension {b} (size {}) must match",
                l[*a as usize], r[*b as usize]
            ));
        }
    }
    let mut want: Vec<i64> = dd.lhs_batch.iter().map(|&i| l[i as usize]).collect();
    want.extend(
        free(l.len(), &dd.lhs_batch, &dd.lhs_contracting)
            .iter()
            .map(|&i| l[i]),
    );
    want.extend(
        free(r.len(), &dd.rhs_batch, &dd.rhs_contracting)
            .iter()
            .map(|&i| r[i]),
    );
    want_out_dims(cx, &want)
}

/// Output → operand `side` (0 lhs, 1 rhs).
fn side_map(cx: &Cx, side: usize) -> IndexingMap {
    let dd = cx.instr.attrs.dot.clone().unwrap_or_default();
    let out = cx.out();
    let (l, r) = (cx.opd(0), cx.opd(1));
    let nb = dd.lhs_batch.len();
    let lfree = free(l.len(), &dd.lhs_batch, &dd.lhs_contracting);
    let (dims, batch, contracting, free_offset) = if side == 0 {
        (l, &dd.lhs_batch, &dd.lhs_contracting, nb)
    } else {
        (r, &dd.rhs_batch, &dd.rhs_contracting, nb + lfree.len())
    };
    let ranges: Vec<i64> = contracting.iter().map(|&i| dims[i as usize]).collect();
    let mut next_free = free_offset;
    let results = (0..dims.len())
        .map(|i| {
            if let Some(b) = pos(batch, i) {
                d(b)
            } else if let Some(k) = pos(contracting, i) {
                Expr::var((out.len() + k) as u32)
            } else {
                next_free += 1;
                d(next_free - 1)
            }
        })
        .collect();
    build(out, &ranges, &[], results, vec![])
}

fn out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    vec![side_map(cx, 0), side_map(cx, 1)]
}

fn in_to_out(cx: &Cx, k: usize) -> IndexingMap {
    let dd = cx.instr.attrs.dot.clone().unwrap_or_default();
    let (l, r) = (cx.opd(0), cx.opd(1));
    let lfree = free(l.len(), &dd.lhs_batch, &dd.lhs_contracting);
    let rfree = free(r.len(), &dd.rhs_batch, &dd.rhs_contracting);
    let (dims, batch, own_free, other_free) = if k == 0 {
        (
            l,
            &dd.lhs_batch,
            &lfree,
            rfree.iter().map(|&i| r[i]).collect::<Vec<_>>(),
        )
    } else {
        (
            r,
            &dd.rhs_batch,
            &rfree,
            lfree.iter().map(|&i| l[i]).collect::<Vec<_>>(),
        )
    };
    let n = dims.len();
    let mut results: Vec<Expr> = batch.iter().map(|&i| d(i as usize)).collect();
    let own: Vec<Expr> = own_free.iter().map(|&i| d(i)).collect();
    let other: Vec<Expr> = (0..other_free.len())
        .map(|j| Expr::var((n + j) as u32))
        .collect();
    if k == 0 {
        results.extend(own);
        results.extend(other);
    } else {
        results.extend(other);
        results.extend(own);
    }
    build(dims, &other_free, &[], results, vec![])
}
