//! `reverse`: a reversed dimension of size n reads index `n - 1 - d`; the map is its own
//! inverse.
//!
//! ```text
//! reverse = f32[1, 17, 9, 9] reverse(p0), dimensions={1, 2}
//! both directions:  (d0, d1, d2, d3) -> (d0, -d1 + 16, -d2 + 8, d3)
//! ```

use super::{attr, build, c, d, want_dim_list, want_operands, want_out_dims, Cx, Family};
use crate::map::IndexingMap;

pub static FAMILY: Family = Family {
    name: "reverse",
    check,
    out_to_in,
    in_to_out,
    approximate: None,
};

fn check(cx: &Cx) -> Result<(), String> {
    want_operands(cx, 1)?;
    want_dim_list(
        "dimensions",
        attr(&cx.instr.attrs.dimensions, "dimensions", "reverse")?,
        cx.opd(0).len(),
    )?;
    want_out_dims(cx, cx.opd(0))
}

fn map(cx: &Cx) -> IndexingMap {
    let rev = cx.instr.attrs.dimensions.as_deref().unwrap_or(&[]);
    let out = cx.out();
    let results = (0..out.len())
        .map(|i| {
            if rev.contains(&(i as i64)) {
                c(out[i] - 1).sub(d(i))
            } else {
                d(i)
            }
        })
        .collect();
    build(out, &[], &[], results, vec![])
}

fn out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    vec![map(cx)]
}

fn in_to_out(cx: &Cx, _: usize) -> IndexingMap {
    map(cx)
}
