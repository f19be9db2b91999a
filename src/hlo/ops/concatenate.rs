//! `concatenate`: each operand owns a band of the output along the concatenated
//! dimension; its output-to-input map is defined only on that band (the domains do not
//! overlap).
//!
//! ```text
//! output = f32[2, 33, 7] concatenate(p0, p1, p2), dimensions={1}    (sizes 5, 11, 17)
//! output → operand 1:  (d0, d1, d2) -> (d0, d1 - 5, d2), domain: ..., d1 in [5, 15], ...
//! operand 1 → output:  (d0, d1, d2) -> (d0, d1 + 5, d2), domain: ..., d1 in [0, 10], ...
//! ```

use super::{attr, build, c, d, want_out_dims, Cx, Family};
use crate::interval::Interval;
use crate::map::IndexingMap;

pub static FAMILY: Family = Family {
    name: "concatenate",
    check,
    out_to_in,
    in_to_out,
    approximate: None,
};

fn axis(cx: &Cx) -> usize {
    cx.instr
        .attrs
        .dimensions
        .as_ref()
        .and_then(|v| v.first())
        .copied()
        .unwrap_or(0) as usize
}

fn check(cx: &Cx) -> Result<(), String> {
    if cx.n_operands() == 0 {
        return Err("`concatenate` needs at least one operand".into());
    }
    let ds = attr(&cx.instr.attrs.dimensions, "dimensions", "concatenate")?;
    let o0 = cx.opd(0);
    match ds.as_slice() {
        [k] if *k >= 0 && (*k as usize) < o0.len() => {}
        _ => {
            return Err(format!(
                "dimensions= must name one dimension below the rank {}",
                o0.len()
            ))
        }
    }
    let a = axis(cx);
    let mut total = 0i64;
    for k in 0..cx.n_operands() {
        let o = cx.opd(k);
        if o.len() != o0.len() || (0..o.len()).any(|i| i != a && o[i] != o0[i]) {
            return Err(format!(
                "operand {k} (`{}`) has shape {}, which differs from operand 0 outside dimension {a}",
                cx.operand(k).name,
                cx.operand(k).shape
            ));
        }
        total = total
            .checked_add(o[a])
            .ok_or("concatenated size overflows")?;
    }
    let mut want = o0.to_vec();
    want[a] = total;
    want_out_dims(cx, &want)
}

fn offset(cx: &Cx, k: usize) -> i64 {
    (0..k).map(|j| cx.opd(j)[axis(cx)]).sum()
}

fn out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    let a = axis(cx);
    let out = cx.out();
    (0..cx.n_operands())
        .map(|k| {
            let off = offset(cx, k);
            let results = (0..out.len())
                .map(|i| if i == a { d(i).sub(c(off)) } else { d(i) })
                .collect();
            let band = Interval::new(off, off + cx.opd(k)[a] - 1);
            build(out, &[], &[], results, vec![(d(a), band)])
        })
        .collect()
}

fn in_to_out(cx: &Cx, k: usize) -> IndexingMap {
    let a = axis(cx);
    let off = offset(cx, k);
    let o = cx.opd(k);
    let results = (0..o.len())
        .map(|i| if i == a { d(i).add(c(off)) } else { d(i) })
        .collect();
    build(o, &[], &[], results, vec![])
}
