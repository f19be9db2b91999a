//! `transpose`: output dimension `j` is operand dimension `dimensions[j]`.
//!
//! ```text
//! transpose = f32[3, 6, 128, 12288] transpose(p0), dimensions={0, 2, 3, 1}
//! output → operand 0:  (d0, d1, d2, d3) -> (d0, d3, d1, d2)
//! operand 0 → output:  (d0, d1, d2, d3) -> (d0, d2, d3, d1)
//! ```

use super::{attr, build, d, want_dim_list, want_operands, want_out_dims, Cx, Family};
use crate::expr::Expr;
use crate::map::IndexingMap;

pub static FAMILY: Family = Family {
    name: "transpose",
    check,
    out_to_in,
    in_to_out,
    approximate: None,
};

fn perm<'a>(cx: &Cx<'a>) -> &'a [i64] {
    cx.instr.attrs.dimensions.as_deref().unwrap_or(&[])
}

fn check(cx: &Cx) -> Result<(), String> {
    want_operands(cx, 1)?;
    let p = attr(&cx.instr.attrs.dimensions, "dimensions", "transpose")?;
    let o = cx.opd(0);
    if p.len() != o.len() {
        return Err(format!(
            "dimensions={{...}} has {} entries but operand 0 has rank {}",
            p.len(),
            o.len()
        ));
    }
    want_dim_list("dimensions", p, o.len())?;
    let want: Vec<i64> = p.iter().map(|&k| o[k as usize]).collect();
    want_out_dims(cx, &want)
}

fn out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    let p = perm(cx);
    let mut results = vec![Expr::constant(0); p.len()];
    for (j, &k) in p.iter().enumerate() {
        results[k as usize] = d(j);
    }
    vec![build(cx.out(), &[], &[], results, vec![])]
}

fn in_to_out(cx: &Cx, _: usize) -> IndexingMap {
    let results = perm(cx).iter().map(|&k| d(k as usize)).collect();
    build(cx.opd(0), &[], &[], results, vec![])
}
