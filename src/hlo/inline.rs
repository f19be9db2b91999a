//! Inlining for the whole-computation analyses: nested `fusion` and `call` instructions
//! are replaced by the instructions of their computations, and a `get-tuple-element` of a
//! `tuple` by the element it picks. The result computes the same outputs from the same
//! parameters, so indexing composes through nested and multi-output fusions as if they
//! were written flat (XLA's fusion adaptor makes nested fusions transparent the same way):
//! a dynamic offset that is a constant outside the nested fusion folds inside it, and a
//! multi-output nested fusion read through `get-tuple-element(f), index=k` reads exactly
//! its root's element `k`.
//!
//! ```text
//! inner { q = f32[4,6] parameter(0)                   flat:
//!         t = f32[6,4] transpose(q), dimensions={1,0}   f/t = f32[6,4] transpose(p0), ...
//!         ROOT r = (f32[6,4], f32[4,6]) tuple(t, q) }    ROOT n = f32[6,4] negate(f/t)
//! outer { p0 = f32[4,6] parameter(0)
//!         f = (f32[6,4], f32[4,6]) fusion(p0), calls=inner
//!         g = f32[6,4] get-tuple-element(f), index=0
//!         ROOT n = f32[6,4] negate(g) }
//! ```
//!
//! Inlined instructions are named `FUSION/NAME`. Instructions no output reads are dropped;
//! the computation's own parameters all stay. A callee that calls itself (directly or
//! not), or whose parameters differ in number or shape from the call's operands, stays an
//! opaque call.

use super::{Computation, Instr, InstrId, Module};

/// How deep nested calls are inlined; deeper ones stay opaque (UNDEFINED indexing).
const MAX_DEPTH: usize = 64;

/// `comp` with nested fusions and calls inlined and tuple plumbing resolved.
pub fn flatten(module: &Module, comp: &Computation) -> Computation {
    let mut out: Vec<Instr> = Vec::new();
    let mut stack = vec![comp.name.clone()];
    let args: Vec<InstrId> = Vec::new();
    let root = emit(module, comp, &args, "", &mut out, &mut stack, true);
    compact(comp, out, root)
}

/// Whether `flatten` would change anything (a nested call or a tuple element read).
pub fn has_nesting(module: &Module, comp: &Computation) -> bool {
    comp.instrs.iter().any(|i| {
        callee(module, i).is_some()
            || (i.opcode == "get-tuple-element"
                && i.operands
                    .first()
                    .is_some_and(|&o| comp.instrs[o].opcode == "tuple"))
    })
}

fn callee<'m>(module: &'m Module, ins: &Instr) -> Option<&'m Computation> {
    if !matches!(ins.opcode.as_str(), "fusion" | "call") {
        return None;
    }
    ins.attrs
        .calls
        .as_deref()
        .or(ins.attrs.to_apply.as_deref())
        .and_then(|c| module.computation(c))
}

/// Operands before users, every instruction once.
fn topological(comp: &Computation) -> Vec<InstrId> {
    let all: Vec<InstrId> = (0..comp.instrs.len()).collect();
    let mut o = super::fusion::reverse_topological(comp, &all);
    o.reverse();
    o
}

/// Appends `comp`'s instructions to `out` (its parameters replaced by `args` unless `top`)
/// and returns the id of its root there.
fn emit(
    module: &Module,
    comp: &Computation,
    args: &[InstrId],
    prefix: &str,
    out: &mut Vec<Instr>,
    stack: &mut Vec<String>,
    top: bool,
) -> InstrId {
    let params = comp.parameters();
    let mut id_of: Vec<Option<InstrId>> = vec![None; comp.instrs.len()];
    if !top {
        for (k, &p) in params.iter().enumerate() {
            id_of[p] = Some(args[k]);
        }
    }
    for id in topological(comp) {
        if id_of[id].is_some() {
            continue;
        }
        let ins = &comp.instrs[id];
        let operands: Vec<InstrId> = ins
            .operands
            .iter()
            .map(|&o| id_of[o].expect("operands come first"))
            .collect();
        if let Some(c) = callee(module, ins) {
            let cp = c.parameters();
            let fits = cp.len() == operands.len()
                && cp
                    .iter()
                    .zip(&operands)
                    .all(|(&q, &o)| c.instrs[q].shape.dims() == out[o].shape.dims())
                && !stack.contains(&c.name)
                && stack.len() < MAX_DEPTH;
            if fits {
                stack.push(c.name.clone());
                let inner_prefix = format!("{prefix}{}/", ins.name);
                let r = emit(module, c, &operands, &inner_prefix, out, stack, false);
                stack.pop();
                id_of[id] = Some(r);
                continue;
            }
        }
        if ins.opcode == "get-tuple-element" {
            if let (Some(&t), Some(k)) = (operands.first(), ins.attrs.index) {
                let tuple = &out[t];
                if tuple.opcode == "tuple" {
                    if let Some(&e) = usize::try_from(k).ok().and_then(|k| tuple.operands.get(k)) {
                        if out[e].shape.dims() == ins.shape.dims() && !out[e].shape.is_tuple() {
                            id_of[id] = Some(e);
                            continue;
                        }
                    }
                }
            }
        }
        let mut copy = ins.clone();
        copy.operands = operands;
        if !prefix.is_empty() {
            copy.name = format!("{prefix}{}", ins.name);
        }
        out.push(copy);
        id_of[id] = Some(out.len() - 1);
    }
    id_of[comp.root].expect("the root is emitted")
}

/// Drops instructions that no output reads (keeping the parameters) and renumbers.
fn compact(comp: &Computation, instrs: Vec<Instr>, root: InstrId) -> Computation {
    let tmp = Computation {
        name: comp.name.clone(),
        instrs,
        root,
        is_entry: comp.is_entry,
        span: comp.span,
    };
    let mut keep = vec![false; tmp.instrs.len()];
    for id in super::fusion::reverse_topological(&tmp, &[root]) {
        keep[id] = true;
    }
    for (k, i) in tmp.instrs.iter().enumerate() {
        if i.opcode == "parameter" {
            keep[k] = true;
        }
    }
    let mut new_id = vec![usize::MAX; tmp.instrs.len()];
    let mut instrs = Vec::new();
    for (k, i) in tmp.instrs.into_iter().enumerate() {
        if keep[k] {
            new_id[k] = instrs.len();
            instrs.push(i);
        }
    }
    for i in &mut instrs {
        for o in &mut i.operands {
            *o = new_id[*o];
        }
    }
    Computation {
        name: tmp.name,
        instrs,
        root: new_id[root],
        is_entry: tmp.is_entry,
        span: tmp.span,
    }
}
