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
