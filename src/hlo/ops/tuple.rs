//! `tuple` and `get-tuple-element`: plumbing of multi-output ops. A tuple's element `k`
//! is operand `k`, element for element; a get-tuple-element reads its element of the
//! tuple at the same index.

use super::{build, d, want_operands, Cx, Family};
use crate::map::IndexingMap;

pub static TUPLE: Family = Family {
    name: "tuple",
    check: check_tuple,
    out_to_in: tuple_out_to_in,
    in_to_out: tuple_in_to_out,
    approximate: None,
};

pub static GET_TUPLE_ELEMENT: Family = Family {
    name: "get-tuple-element",
    check: check_gte,
    out_to_in: gte_out_to_in,
    in_to_out: gte_in_to_out,
    approximate: None,
};

fn check_tuple(_: &Cx) -> Result<(), String> {
    Ok(())
}

/// Element `k` of the tuple → operand `k` (identity over the operand's shape).
fn tuple_out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    (0..cx.n_operands())
        .map(|k| {
            let o = cx.opd(k);
            build(o, &[], &[], (0..o.len()).map(d).collect(), vec![])
        })
        .collect()
}

fn tuple_in_to_out(cx: &Cx, k: usize) -> IndexingMap {
    let o = cx.opd(k);
    build(o, &[], &[], (0..o.len()).map(d).collect(), vec![])
}

fn check_gte(cx: &Cx) -> Result<(), String> {
    want_operands(cx, 1)?;
    let i = cx
        .instr
        .attrs
        .index
        .ok_or("`get-tuple-element` needs the attribute `index`")?;
    let elems = cx.operand(0).shape.tuple_elements();
    match usize::try_from(i).ok().and_then(|i| elems.get(i)) {
        Some(s) if s.dims() == cx.out() => Ok(()),
        Some(s) => Err(format!(
            "element {i} of the tuple has shape {s}, not {}",
            cx.instr.shape
        )),
        None => Err(format!(
            "index={i} is outside the tuple of {} elements",
            elems.len()
        )),
    }
}

fn gte_out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    let out = cx.out();
    vec![build(
        out,
        &[],
        &[],
        (0..out.len()).map(d).collect(),
        vec![],
    )]
}

fn gte_in_to_out(cx: &Cx, _: usize) -> IndexingMap {
    gte_out_to_in(cx).remove(0)
}
