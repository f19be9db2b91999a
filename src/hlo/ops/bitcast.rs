//! `bitcast`: the same bytes read through another shape and layout. As XLA does, it is a
//! transpose (logical → physical order of the output), a reshape of the physical shapes,
//! and a transpose (physical → logical order of the operand), composed into one map.
//!
//! ```text
//! b = f32[8,4]{0,1} bitcast(f32[4,8]{1,0} p0)
//! output → operand 0:  (d0, d1) -> (d1, d0)     (same memory, dims swapped)
//! ```

use super::reshape::{delinearize, linearize};
use super::{build, c, d, Cx, Family};
use crate::expr::Expr;
use crate::hlo::Shape;
use crate::map::IndexingMap;

pub static FAMILY: Family = Family {
    name: "bitcast",
    check,
    out_to_in,
    in_to_out,
    approximate: None,
};

fn check(cx: &Cx) -> Result<(), String> {
    super::reshape::same_element_count(cx, "bitcast")
}

/// The map from a logical index of `from` to the logical index of `to` at the same
/// physical position.
pub fn bitcast_map(from: &Shape, to: &Shape) -> IndexingMap {
    let fd = from.dims();
    let td = to.dims();
    let f_order = from.major_to_minor();
    let t_order = to.major_to_minor();
    let atoms: Vec<Expr> = f_order.iter().map(|&k| d(k)).collect();
    let phys_from: Vec<i64> = f_order.iter().map(|&k| fd[k]).collect();
    let phys_to: Vec<i64> = t_order.iter().map(|&k| td[k]).collect();
    let l = linearize(&atoms, &phys_from);
    let phys = delinearize(&l, &phys_to);
    let mut results = vec![c(0); td.len()];
    for (j, &k) in t_order.iter().enumerate() {
        results[k] = phys[j];
    }
    build(fd, &[], &[], results, vec![])
}

fn out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    vec![bitcast_map(&cx.instr.shape, &cx.operand(0).shape)]
}

fn in_to_out(cx: &Cx, _: usize) -> IndexingMap {
    bitcast_map(&cx.operand(0).shape, &cx.instr.shape)
}
