//! Variadic `reduce(inputs..., inits...)`: an output element reads a whole range of every
//! input along the reduced dimensions (range variables, in input-dimension order) and
//! every init value.
//!
//! ```text
//! out = (f32[10], s32[10]) reduce(p0, p1, p0_init, p1_init), dimensions={0}, to_apply=max
//! output → p0:       (d0)[s0] -> (s0, d0), domain: d0 in [0, 9], s0 in [0, 255]
//! output → p0_init:  (d0) -> ()
//! p0 → output:       (d0, d1) -> (d1)
//! p0_init → output:  ()[s0] -> (s0), domain: s0 in [0, 9]
//! ```

use super::{attr, build, d, want_dim_list, want_out_dims, Cx, Family};
use crate::expr::Expr;
use crate::map::IndexingMap;

pub static FAMILY: Family = Family {
    name: "reduce",
    check,
    out_to_in,
    in_to_out,
    approximate: None,
};

fn check(cx: &Cx) -> Result<(), String> {
    let n = cx.n_operands();
    if n == 0 || n % 2 != 0 {
        return Err(format!(
            "`reduce` takes inputs and as many init values, found {n} operands"
        ));
    }
    let half = n / 2;
    let ds = attr(&cx.instr.attrs.dimensions, "dimensions", "reduce")?;
    let in0 = cx.opd(0);
    want_dim_list("dimensions", ds, in0.len())?;
    for k in 1..half {
        if cx.opd(k) != in0 {
            return Err(format!(
                "input {k} (`{}`) has a different shape from input 0",
                cx.operand(k).name
            ));
        }
    }
    for k in half..n {
        if !cx.opd(k).is_empty() {
            return Err(format!(
                "init value {} (`{}`) must be a scalar",
                k - half,
                cx.operand(k).name
            ));
        }
    }
    let kept: Vec<i64> = (0..in0.len())
        .filter(|i| !ds.contains(&(*i as i64)))
        .map(|i| in0[i])
        .collect();
    for s in cx.instr.shape.tuple_elements() {
        if s.dims() != kept.as_slice() {
            return want_out_dims(cx, &kept);
        }
    }
    Ok(())
}

fn out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    let ds = cx.instr.attrs.dimensions.as_deref().unwrap_or(&[]);
    let out = cx.out();
    let half = cx.n_operands() / 2;
    let input = cx.opd(0);
    let mut ranges = Vec::new();
    let mut results = Vec::new();
    let mut next_out = 0;
    for (i, &n) in input.iter().enumerate() {
        if ds.contains(&(i as i64)) {
            results.push(Expr::var((out.len() + ranges.len()) as u32));
            ranges.push(n);
        } else {
            results.push(d(next_out));
            next_out += 1;
        }
    }
    let m = build(out, &ranges, &[], results, vec![]);
    let init = build(out, &[], &[], vec![], vec![]);
    (0..cx.n_operands())
        .map(|k| if k < half { m.clone() } else { init.clone() })
        .collect()
}

fn in_to_out(cx: &Cx, k: usize) -> IndexingMap {
    let ds = cx.instr.attrs.dimensions.as_deref().unwrap_or(&[]);
    let out = cx.out();
    if k >= cx.n_operands() / 2 {
        return build(&[], out, &[], (0..out.len()).map(d).collect(), vec![]);
    }
    let input = cx.opd(k);
    let results = (0..input.len())
        .filter(|i| !ds.contains(&(*i as i64)))
        .map(d)
        .collect();
    build(input, &[], &[], results, vec![])
}
