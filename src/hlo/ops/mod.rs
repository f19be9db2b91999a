//! Output-to-input and input-to-output indexing of single HLO instructions, one file per
//! op family, and the opcode table that picks the family.
//!
//! Every family answers three questions about an instruction (given as a [`Cx`], which
//! also sees the rest of the computation so runtime variables can be folded):
//!
//! * `check`: do the operand shapes and attributes fit the op? (an error names the problem)
//! * `out_to_in`: for every operand, the map from an output index to the operand elements
//!   it reads;
//! * `in_to_out`: from operand `k`, the map from an operand index to the output elements
//!   that read it.
//!
//! An opcode not in [`FAMILIES`] parses fine and reports `UNDEFINED` indexing.

mod bitcast;
mod broadcast;
mod concatenate;
mod convolution;
mod dot;
mod dynamic_slice;
pub mod elementwise;
mod gather;
mod nullary;
mod pad;
mod reduce;
mod reduce_window;
pub mod reshape;
mod reverse;
mod scatter;
mod slice;
mod transpose;
mod tuple;

use super::{Computation, Instr, InstrId};
use crate::expr::Expr;
use crate::interval::Interval;
use crate::map::{default_vars, IndexingMap, Status, VarKind, Variable};

/// Distinct maps from one tensor to another. `[UNDEFINED]` when the indexing is unknown.
pub type MapSet = Vec<IndexingMap>;

/// An instruction in the context of its computation.
pub struct Cx<'a> {
    pub comp: &'a Computation,
    pub id: InstrId,
    pub instr: &'a Instr,
}

impl<'a> Cx<'a> {
    pub fn new(comp: &'a Computation, id: InstrId) -> Cx<'a> {
        Cx {
            comp,
            id,
            instr: &comp.instrs[id],
        }
    }
    /// Dimensions of the (first) output.
    pub fn out(&self) -> &'a [i64] {
        self.instr.dims()
    }
    /// Dimensions of operand `k`.
    pub fn opd(&self, k: usize) -> &'a [i64] {
        self.comp.instrs[self.instr.operands[k]].dims()
    }
    pub fn operand(&self, k: usize) -> &'a Instr {
        &self.comp.instrs[self.instr.operands[k]]
    }
    pub fn n_operands(&self) -> usize {
        self.instr.operands.len()
    }
}

/// One op family: how to check it and its maps in both directions.
pub struct Family {
    pub name: &'static str,
    pub check: fn(&Cx) -> Result<(), String>,
    pub out_to_in: fn(&Cx) -> Vec<IndexingMap>,
    pub in_to_out: fn(&Cx, usize) -> IndexingMap,
    /// Set when the maps over-approximate what is read; shown by `help indexing`.
    pub approximate: Option<&'static str>,
}

/// Every op family, by opcode. A new op is a new file here and one line below.
pub static FAMILIES: &[(&[&str], &Family)] = &[
    (elementwise::OPCODES, &elementwise::FAMILY),
    (&["broadcast"], &broadcast::FAMILY),
    (
        &[
            "iota",
            "constant",
            "parameter",
            "rng-get-and-update-state",
            "partition-id",
            "replica-id",
        ],
        &nullary::FAMILY,
    ),
    (&["dynamic-slice"], &dynamic_slice::DYNAMIC_SLICE),
    (
        &["dynamic-update-slice"],
        &dynamic_slice::DYNAMIC_UPDATE_SLICE,
    ),
    (&["gather"], &gather::FAMILY),
    (&["transpose"], &transpose::FAMILY),
    (&["reverse"], &reverse::FAMILY),
    (&["reduce"], &reduce::FAMILY),
    (&["slice"], &slice::FAMILY),
    (&["reshape"], &reshape::FAMILY),
    (&["bitcast"], &bitcast::FAMILY),
    (&["concatenate"], &concatenate::FAMILY),
    (&["dot"], &dot::FAMILY),
    (&["scaled-dot"], &dot::SCALED),
    (&["pad"], &pad::FAMILY),
    (&["reduce-window"], &reduce_window::FAMILY),
    (&["convolution"], &convolution::FAMILY),
    (&["tuple"], &tuple::TUPLE),
    (&["get-tuple-element"], &tuple::GET_TUPLE_ELEMENT),
    (&["scatter"], &scatter::FAMILY),
];

/// Opcodes handled outside the op table: `fusion` and `call` are indexed through their
/// called computation (see `fusion.rs`).
pub static CALL_OPCODES: &[&str] = &["fusion", "call"];

/// Every opcode ixmap knows, sorted and without duplicates: the op table's plus
/// [`CALL_OPCODES`]. Used for completion in the notebook kernel.
pub fn known_opcodes() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = FAMILIES
        .iter()
        .flat_map(|(names, _)| names.iter().copied())
        .chain(CALL_OPCODES.iter().copied())
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

pub fn family(opcode: &str) -> Option<&'static Family> {
    FAMILIES
        .iter()
        .find(|(names, _)| names.contains(&opcode))
        .map(|(_, f)| *f)
}

/// Checks operand count, shapes and attributes of an instruction. Unknown opcodes pass.
pub fn check(comp: &Computation, id: InstrId) -> Result<(), String> {
    match family(&comp.instrs[id].opcode) {
        Some(f) => (f.check)(&Cx::new(comp, id)),
        None => Ok(()),
    }
}

/// Output-to-input maps of every operand (one set per operand, in operand order).
/// The start indices an op's maps fold by the op's own clamping (dynamic-slice,
/// dynamic-update-slice, gather: a constant outside the bounds is clamped into them, as the
/// op does at run time), one line each, for `indexing` to say which rule applied.
pub fn clamp_notes(comp: &Computation, id: InstrId) -> Vec<String> {
    let instr = &comp.instrs[id];
    let Some(f) = family(&instr.opcode) else {
        return vec![];
    };
    let cx = Cx::new(comp, id);
    if (f.check)(&cx).is_err() {
        return vec![];
    }
    match instr.opcode.as_str() {
        "dynamic-slice" | "dynamic-update-slice" => dynamic_slice::clamp_notes(&cx),
        "gather" => gather::clamp_notes(&cx),
        _ => vec![],
    }
}

pub fn output_to_input(comp: &Computation, id: InstrId) -> Vec<MapSet> {
    let instr = &comp.instrs[id];
    let undefined = || vec![vec![IndexingMap::undefined()]; instr.operands.len()];
    let Some(f) = family(&instr.opcode) else {
        return undefined();
    };
    let cx = Cx::new(comp, id);
    if (f.check)(&cx).is_err() {
        return undefined();
    }
    // Zero-sized tensors: no output element reads anything, and nothing is read from an
    // operand without elements. Decided here, before a family divides by an extent.
    // Tuples are left to their families: a tuple's dims are its first element's, and its
    // other elements may have elements.
    let out = cx.out();
    let opd_empty = |k: usize| !cx.operand(k).shape.is_tuple() && has_zero(cx.opd(k));
    if !instr.shape.is_tuple() && has_zero(out) {
        return (0..cx.n_operands())
            .map(|k| vec![empty_map(out, cx.opd(k).len())])
            .collect();
    }
    if (0..cx.n_operands()).any(opd_empty) {
        let maps = (f.out_to_in)(&cx);
        return maps
            .into_iter()
            .enumerate()
            .map(|(k, m)| {
                if opd_empty(k) {
                    vec![empty_map(out, cx.opd(k).len())]
                } else {
                    vec![finish(m)]
                }
            })
            .collect();
    }
    (f.out_to_in)(&cx)
        .into_iter()
        .map(|m| vec![finish(m)])
        .collect()
}

/// Whether a shape has no elements (some dimension is 0).
pub fn has_zero(dims: &[i64]) -> bool {
    dims.contains(&0)
}

/// The KNOWN EMPTY map from a box of `domain` to a tensor of rank `rank`.
pub fn empty_map(domain: &[i64], rank: usize) -> IndexingMap {
    let mut m = build(domain, &[], &[], vec![c(0); rank], vec![]);
    m.status = Status::KnownEmpty;
    m
}

/// Input-to-output maps from operand `k` (one set: the op's output, or its first output).
pub fn input_to_output(comp: &Computation, id: InstrId, k: usize) -> MapSet {
    let instr = &comp.instrs[id];
    let Some(f) = family(&instr.opcode) else {
        return vec![IndexingMap::undefined()];
    };
    let cx = Cx::new(comp, id);
    if k >= instr.operands.len() || (f.check)(&cx).is_err() {
        return vec![IndexingMap::undefined()];
    }
    let empty = |s: &super::Shape| !s.is_tuple() && has_zero(s.dims());
    if empty(&cx.operand(k).shape) || empty(&instr.shape) {
        return vec![empty_map(cx.opd(k), cx.out().len())];
    }
    vec![finish((f.in_to_out)(&cx, k))]
}

/// Simplified, with default variable names (so equal maps compare equal).
pub fn finish(m: IndexingMap) -> IndexingMap {
    if m.is_undefined() {
        return m;
    }
    let mut m = crate::simplify::simplify(&m, &Default::default()).map;
    default_names(&mut m);
    // Printed without `is_simplified`, so op maps and composed fusion maps read alike.
    m.is_simplified = false;
    m
}

/// Renames every variable to `d*`, `s*`, `r*` by position.
pub fn default_names(m: &mut IndexingMap) {
    for (kind, vars) in [
        (VarKind::Dim, &mut m.dims),
        (VarKind::Range, &mut m.ranges),
        (VarKind::Runtime, &mut m.runtimes),
    ] {
        for (i, v) in vars.iter_mut().enumerate() {
            v.name = format!("{}{}", kind.default_prefix(), i);
        }
    }
}

// ------------------------------------------------------------------ helpers for families

/// `d_i` (dimension `i`).
pub fn d(i: usize) -> Expr {
    Expr::var(i as u32)
}
pub fn c(v: i64) -> Expr {
    Expr::constant(v)
}

/// A map whose dims are a box of `dims`, with range variables of the given extents and
/// runtime variables with the given bounds; variables are numbered dims, ranges, runtimes.
pub fn build(
    dims: &[i64],
    ranges: &[i64],
    runtimes: &[Interval],
    results: Vec<Expr>,
    constraints: Vec<(Expr, Interval)>,
) -> IndexingMap {
    let rts = runtimes
        .iter()
        .enumerate()
        .map(|(i, b)| Variable {
            name: format!("r{i}"),
            bounds: *b,
        })
        .collect();
    IndexingMap::new(
        default_vars(VarKind::Dim, dims),
        default_vars(VarKind::Range, ranges),
        rts,
        results,
        constraints,
    )
}

/// A map that is empty: some dimension has extent 0.
pub fn known_empty_if_zero(mut m: IndexingMap) -> IndexingMap {
    if m.dims.iter().any(|v| v.bounds.is_empty()) {
        m.status = Status::KnownEmpty;
    }
    m
}

// ------------------------------------------------------------------ checks shared by families

/// An error where a batched gather or scatter names its batching dimensions (any of
/// `keys` given and not empty): ixmap reads plain gathers and scatters only. XLA rewrites
/// batched ones into plain ones before it emits them (the batch index joins the start
/// indices), so optimized dumps carry the plain form; the attributes must not be ignored,
/// since they change which elements are read.
pub fn refuse_batching(cx: &Cx, keys: &[&str]) -> Result<(), String> {
    for (k, v) in &cx.instr.attrs.other {
        let empty = v.chars().all(|c| c == '{' || c == '}' || c.is_whitespace());
        if keys.contains(&k.as_str()) && !empty {
            return Err(format!(
                "`{k}={v}`: a batched {} is not supported (XLA rewrites it into a plain one, the batch index joined to the start indices, before emitting it; its optimized dumps carry that form)",
                cx.instr.opcode
            ));
        }
    }
    Ok(())
}

pub fn want_operands(cx: &Cx, n: usize) -> Result<(), String> {
    if cx.n_operands() != n {
        return Err(format!(
            "`{}` takes {n} operand{}, found {}",
            cx.instr.opcode,
            if n == 1 { "" } else { "s" },
            cx.n_operands()
        ));
    }
    Ok(())
}

pub fn want_rank(cx: &Cx, k: usize, rank: usize) -> Result<(), String> {
    let r = cx.opd(k).len();
    if r != rank {
        return Err(format!(
            "operand {k} (`{}`) has rank {r} but `{}` needs rank {rank} here",
            cx.operand(k).name,
            cx.instr.opcode
        ));
    }
    Ok(())
}

pub fn want_out_dims(cx: &Cx, want: &[i64]) -> Result<(), String> {
    if cx.out() != want {
        return Err(format!(
            "the output shape is {} but the operands give [{}]",
            cx.instr.shape,
            want.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ));
    }
    Ok(())
}

/// Every entry a distinct dimension index below `rank`.
pub fn want_dim_list(what: &str, list: &[i64], rank: usize) -> Result<(), String> {
    let mut seen = vec![false; rank];
    for &x in list {
        if x < 0 || x as usize >= rank {
            return Err(format!(
                "{what} names dimension {x}, but the rank is {rank}"
            ));
        }
        if std::mem::replace(&mut seen[x as usize], true) {
            return Err(format!("{what} names dimension {x} twice"));
        }
    }
    Ok(())
}

pub fn attr<'a, T>(v: &'a Option<T>, name: &str, op: &str) -> Result<&'a T, String> {
    v.as_ref()
        .ok_or_else(|| format!("`{op}` needs the attribute `{name}`"))
}

/// A map between logical indices made a map between physical ones, as XLA's analysis does
/// with `use_physical_layout`: physical `from` → logical `from`, then `m`, then logical
/// `to` → physical `to`. Undefined and KNOWN EMPTY maps stay as they are (over the
/// physical domain when empty).
pub fn to_physical(m: &IndexingMap, from: &super::Shape, to: &super::Shape) -> IndexingMap {
    if m.is_undefined() {
        return m.clone();
    }
    if m.is_known_empty() {
        return empty_map(from.physical().dims(), to.dims().len());
    }
    let a = crate::map::compose(&from.physical_to_logical(), m);
    let b = a.and_then(|a| crate::map::compose(&a, &to.logical_to_physical()));
    match b {
        Ok(x) => super::fusion::finish(x),
        Err(_) => IndexingMap::undefined(),
    }
}
