//! `broadcast`: the output dimensions listed in `dimensions` come from the operand, the
//! others are new.
//!
//! ```text
//! p0  = f32[20] parameter(0)
//! bc0 = f32[10, 20, 30] broadcast(p0), dimensions={1}
//! output → operand 0:  (d0, d1, d2) -> (d1)
//! operand 0 → output:  (d0)[s0, s1] -> (s0, d0, s1)
//! ```
//!
//! Shown running in `sessions/hlo/broadcast.ixm`.

use super::{attr, build, d, want_dim_list, want_operands, Cx, Family};
use crate::expr::Expr;
use crate::map::IndexingMap;

pub static FAMILY: Family = Family {
    name: "broadcast",
    check,
    out_to_in,
    in_to_out,
    approximate: None,
};

fn dims<'a>(cx: &Cx<'a>) -> &'a [i64] {
    cx.instr.attrs.dimensions.as_deref().unwrap_or(&[])
}

fn check(cx: &Cx) -> Result<(), String> {
    want_operands(cx, 1)?;
    let ds = attr(&cx.instr.attrs.dimensions, "dimensions", "broadcast")?;
    want_dim_list("dimensions", ds, cx.out().len())?;
    let o = cx.opd(0);
    if ds.len() != o.len() {
        return Err(format!(
            "dimensions={{...}} has {} entries but operand 0 (`{}`) has rank {}",
            ds.len(),
            cx.operand(0).name,
            o.len()
        ));
    }
    for (i, &k) in ds.iter().enumerate() {
        if cx.out()[k as usize] != o[i] {
            return Err(format!(
                "operand dimension {i} has size {} but output dimension {k} has size {}",
                o[i],
                cx.out()[k as usize]
            ));
        }
    }
    Ok(())
}

fn out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    let results = dims(cx).iter().map(|&k| d(k as usize)).collect();
    vec![build(cx.out(), &[], &[], results, vec![])]
}

fn in_to_out(cx: &Cx, _k: usize) -> IndexingMap {
    let ds = dims(cx);
    let n_in = ds.len();
    let mut ranges = Vec::new();
    let mut results = Vec::new();
    for (j, &n) in cx.out().iter().enumerate() {
        match ds.iter().position(|&k| k as usize == j) {
            Some(i) => results.push(d(i)),
            None => {
                results.push(Expr::var((n_in + ranges.len()) as u32));
                ranges.push(n);
            }
        }
    }
    build(cx.opd(0), &ranges, &[], results, vec![])
}
