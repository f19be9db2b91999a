//! `scatter(operand, indices, updates)`, from XLA's documented semantics: the output has
//! the operand's shape and starts as the operand; each update element `u` is split into
//! its scatter dimensions (those not in `update_window_dims`, which pick a row of
//! `indices`) and its window dimensions. The row gives start offsets for the operand
//! dimensions in `scatter_dims_to_operand_dims`; the window index, with a 0 inserted at
//! each of `inserted_window_dims`, is added to the start, and `to_apply` combines the
//! update into the output there. An update whose window does not fit in the operand is
//! skipped (as XLA's implementations do), so a start offset of operand dimension `k`
//! lies in `[0, size_k - window_k]`.
//!
//! ```text
//! scatter = f32[10,8] scatter(f32[10,8] operand, s32[5,1] indices, f32[5,3] updates),
//!   update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1
//! output → operand:  (d0, d1) -> (d0, d1)
//! output → indices:  (d0, d1)[s0, s1] -> (s0, s1)
//! output → updates:  (d0, d1)[s0]{r0} -> (s0, d1), d0 - r0 in [0, 0], d1 in [0, 2]
//! updates → output:  (d0, d1){r0} -> (r0, d1)
//! ```
//!
//! A variadic scatter `scatter(op_0..op_{n-1}, indices, upd_0..upd_{n-1})` returns a tuple
//! of n arrays of the operands' shape; `to_apply` takes the n current values and the n
//! updates at one position, so every output element reads every operand at its own
//! position and every updates array as above.
//!
//! Which updates land on an output element depends on the index values, so an output
//! element's maps to the indices (every element: any row may land on it, and whether one
//! does depends on all of them) and to the updates (any row whose window can cover it, the
//! start a runtime variable) are what XLA's analysis gives. The indices map is exact for
//! that dependence; the updates maps, both ways, over-approximate.

use super::{attr, build, c, d, want_dim_list, want_out_dims, Cx, Family};
use crate::expr::Expr;
use crate::hlo::ScatterDims;
use crate::interval::Interval;
use crate::map::IndexingMap;

pub static FAMILY: Family = Family {
    name: "scatter",
    check,
    out_to_in,
    in_to_out,
    approximate: Some(
        "to and from the updates, every row whose window can cover the element (starts are runtime variables)",
    ),
};

/// The dimension numbers, resolved against the shapes.
struct Layout {
    /// Updates dimensions that pick an index row, in order.
    scatter_upd: Vec<usize>,
    /// For each operand dimension: the updates dimension giving its window index (None
    /// for an inserted dimension) and the window size.
    window: Vec<(Option<usize>, i64)>,
    /// For each operand dimension: the entry of the index vector giving its start.
    start_of: Vec<Option<usize>>,
}

/// The number of scattered arrays: `scatter(op_0..op_{n-1}, indices, upd_0..upd_{n-1})`
/// (variadic scatter, one `to_apply` combining the n values at one position) has `2n + 1`
/// operands; the indices are operand `n`, the first updates operand `n + 1`.
fn arrays(cx: &Cx) -> usize {
    cx.n_operands().saturating_sub(1) / 2
}

fn layout(cx: &Cx) -> Layout {
    let s: ScatterDims = cx.instr.attrs.scatter.clone().unwrap_or_default();
    let n = arrays(cx);
    let (op, upd) = (cx.opd(0), cx.opd(n + 1));
    let scatter_upd = (0..upd.len())
        .filter(|j| !s.update_window_dims.contains(&(*j as i64)))
        .collect();
    let mut uw = s.update_window_dims.iter();
    let window = (0..op.len())
        .map(|k| {
            if s.inserted_window_dims.contains(&(k as i64)) {
                (None, 1)
            } else {
                let j = uw.next().map(|&j| j as usize);
                (j, j.and_then(|j| upd.get(j).copied()).unwrap_or(1))
            }
        })
        .collect();
    let start_of = (0..op.len())
        .map(|k| {
            s.scatter_dims_to_operand_dims
                .iter()
                .position(|&x| x == k as i64)
        })
        .collect();
    Layout {
        scatter_upd,
        window,
        start_of,
    }
}

fn check(cx: &Cx) -> Result<(), String> {
    super::refuse_batching(
        cx,
        &["input_batching_dims", "scatter_indices_batching_dims"],
    )?;
    let total = cx.n_operands();
    if total < 3 || total % 2 == 0 {
        return Err(format!(
            "scatter takes n operands, the indices and n updates (2n + 1 operands), not {total}"
        ));
    }
    let n = arrays(cx);
    let s = attr(&cx.instr.attrs.scatter, "update_window_dims", "scatter")?;
    let g = attr(&cx.instr.attrs.gather, "index_vector_dim", "scatter")?;
    let (op, ix, upd) = (cx.opd(0), cx.opd(n), cx.opd(n + 1));
    for k in 1..n {
        if cx.opd(k) != op {
            return Err(format!(
                "operand {k} (`{}`) has dimensions {:?}, operand 0 {op:?}: a variadic scatter's operands share one shape",
                cx.operand(k).name,
                cx.opd(k)
            ));
        }
        if cx.opd(n + 1 + k) != upd {
            return Err(format!(
                "updates {k} (`{}`) has dimensions {:?}, updates 0 {upd:?}: a variadic scatter's updates share one shape",
                cx.operand(n + 1 + k).name,
                cx.opd(n + 1 + k)
            ));
        }
    }
    let outs = cx.instr.shape.tuple_elements();
    if n > 1 && outs.len() != n {
        return Err(format!(
            "a scatter of {n} operands returns a tuple of {n} arrays, not {}",
            outs.len()
        ));
    }
    for o in outs {
        if o.dims() != op {
            return want_out_dims(cx, op);
        }
    }
    want_dim_list("update_window_dims", &s.update_window_dims, upd.len())?;
    if s.update_window_dims.windows(2).any(|w| w[0] >= w[1]) {
        return Err("update_window_dims must be sorted".into());
    }
    want_dim_list("inserted_window_dims", &s.inserted_window_dims, op.len())?;
    want_dim_list(
        "scatter_dims_to_operand_dims",
        &s.scatter_dims_to_operand_dims,
        op.len(),
    )?;
    let ivd = g.index_vector_dim;
    if ivd < 0 || ivd as usize > ix.len() {
        return Err(format!(
            "index_vector_dim={ivd} is not a dimension of the indices (rank {})",
            ix.len()
        ));
    }
    let ivd = ivd as usize;
    let nvec = if ivd < ix.len() { ix[ivd] } else { 1 };
    if nvec != s.scatter_dims_to_operand_dims.len() as i64 {
        return Err(format!(
            "the index vector has {nvec} entries but scatter_dims_to_operand_dims has {}",
            s.scatter_dims_to_operand_dims.len()
        ));
    }
    if s.update_window_dims.len() + s.inserted_window_dims.len() != op.len() {
        return Err(format!(
            "update_window_dims ({}) and inserted_window_dims ({}) do not add up to the operand rank {}",
            s.update_window_dims.len(),
            s.inserted_window_dims.len(),
            op.len()
        ));
    }
    let l = layout(cx);
    let batch: Vec<i64> = (0..ix.len()).filter(|&q| q != ivd).map(|q| ix[q]).collect();
    let scatter_sizes: Vec<i64> = l.scatter_upd.iter().map(|&j| upd[j]).collect();
    if batch != scatter_sizes {
        return Err(format!(
            "the updates' scatter dimensions {scatter_sizes:?} do not match the indices' batch dimensions {batch:?}"
        ));
    }
    for (k, &(_, w)) in l.window.iter().enumerate() {
        if w > op[k] {
            return Err(format!(
                "the update window ({w}) exceeds operand dimension {k} (size {})",
                op[k]
            ));
        }
    }
    Ok(())
}

/// Start offset bounds of operand dimension `k`: the window fits.
fn start_bounds(op: &[i64], l: &Layout, k: usize) -> Interval {
    Interval::new(0, op[k] - l.window[k].1)
}

fn out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    let na = arrays(cx);
    let (op, ix, upd, out) = (cx.opd(0), cx.opd(na), cx.opd(na + 1), cx.out());
    let l = layout(cx);
    let n = out.len();
    let operand = build(out, &[], &[], (0..n).map(d).collect(), vec![]);
    let indices = build(
        out,
        ix,
        &[],
        (0..ix.len()).map(|q| Expr::var((n + q) as u32)).collect(),
        vec![],
    );
    // Updates: scatter dims are range variables; each started operand dim has a runtime
    // start; the window index is the output index minus the start, within the window.
    let ranges: Vec<i64> = l.scatter_upd.iter().map(|&j| upd[j]).collect();
    let mut rts = Vec::new();
    let mut start = Vec::new();
    for k in 0..op.len() {
        start.push(match l.start_of[k] {
            Some(_) => {
                rts.push(start_bounds(op, &l, k));
                Expr::var((n + ranges.len() + rts.len() - 1) as u32)
            }
            None => c(0),
        });
    }
    let mut results = vec![c(0); upd.len()];
    for (t, &j) in l.scatter_upd.iter().enumerate() {
        results[j] = Expr::var((n + t) as u32);
    }
    let mut constraints = Vec::new();
    for k in 0..op.len() {
        let (j, w) = l.window[k];
        let win = d(k).sub(start[k].clone());
        if l.start_of[k].is_some() || w < op[k] {
            constraints.push((win.clone(), Interval::new(0, w - 1)));
        }
        if let Some(j) = j {
            results[j] = win;
        }
    }
    let updates = build(out, &ranges, &rts, results, constraints);
    // Every output reads every operand and every updates array at the same positions:
    // `to_apply` combines all of them into each output element.
    let mut maps = vec![operand; na];
    maps.push(indices);
    maps.extend(std::iter::repeat_n(updates, na));
    maps
}

/// From the operand: the identity. From the indices: every output element (whether an
/// update lands anywhere depends on every index). From the updates: the start (a runtime
/// variable for each started dimension) plus the window index.
fn in_to_out(cx: &Cx, k: usize) -> IndexingMap {
    let na = arrays(cx);
    let (op, ix, upd, out) = (cx.opd(0), cx.opd(na), cx.opd(na + 1), cx.out());
    match k.cmp(&na) {
        std::cmp::Ordering::Less => build(op, &[], &[], (0..op.len()).map(d).collect(), vec![]),
        std::cmp::Ordering::Equal => build(
            ix,
            out,
            &[],
            (0..out.len())
                .map(|j| Expr::var((ix.len() + j) as u32))
                .collect(),
            vec![],
        ),
        std::cmp::Ordering::Greater => {
            let l = layout(cx);
            let mut rts = Vec::new();
            let mut results = Vec::new();
            for q in 0..op.len() {
                let base = match l.window[q].0 {
                    Some(j) => d(j),
                    None => c(0),
                };
                results.push(match l.start_of[q] {
                    Some(_) => {
                        rts.push(start_bounds(op, &l, q));
                        base.add(Expr::var((upd.len() + rts.len() - 1) as u32))
                    }
                    None => base,
                });
            }
            build(upd, &[], &rts, results, vec![])
        }
    }
}
