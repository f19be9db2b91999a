//! Epilogues of heroes (seed 003, XLA's reduction and transpose emitters): a *hero* is a
//! `reduce` or a `transpose` that the emitter computes with its own scheme (a reduction
//! loop, a tile through shared memory); everything between the hero and the fusion roots
//! that read it is the hero's *epilogue*, emitted as a function of its own that receives
//! the hero's value as an injected argument.
//!
//! ```text
//! p -> exp -> reduce r -> negate n -> ROOT tuple(n, m)     hero r, epilogue {n}, root n
//!                      \-> multiply m (with p's reduce s)  hero r and s, epilogue {m}
//! ```
//!
//! For each hero this finds: the roots it reaches (walking users, not through another
//! hero), the input-to-output maps from the hero's output index to each root's output
//! index (composed per op along every path, simplified and deduplicated), and the
//! subgraph the epilogue computes: every instruction a root reads, walking operands up to
//! heroes (injected values) and parameters (read from their tensors). A hero that is
//! itself a root has an empty epilogue and the identity map.
//!
//! The epilogue function's signature follows seed 003's form with XLA's injected values
//! after the indices: one tensor per computation parameter, one index per dimension of
//! the hero's output, one scalar per injected hero value, one result per root:
//! `(%p0: tensor<4x8xf32>, %i0: index, %r: f32) -> (f32)`.
//!
//! Which instructions are heroes is simplified from XLA: every `reduce`, and every
//! `transpose` that moves the last (minor-most logical) dimension; XLA also requires
//! shapes its emitters tile well. Shown in `sessions/hlo/epilogues.ixm`.

use super::ops::MapSet;
use super::partition::{mlir_elem, signature_args};
use super::{Computation, InstrId};
use std::collections::HashSet;

/// One hero's epilogue.
#[derive(Clone, Debug)]
pub struct Epilogue {
    pub hero: InstrId,
    /// Roots (computation outputs) the hero reaches, in output order.
    pub roots: Vec<InstrId>,
    /// For each root, the maps from the hero's output index to the root's output index.
    pub maps: Vec<MapSet>,
    /// The instructions the epilogue computes, users before operands (without heroes and
    /// parameters); empty when the hero is its only root.
    pub subgraph: Vec<InstrId>,
    /// Heroes whose values the epilogue receives (this one first).
    pub injected: Vec<InstrId>,
}

/// Whether `id` is a hero: a reduce, or a transpose that moves the minor-most dimension.
pub fn is_hero(comp: &Computation, id: InstrId) -> bool {
    let ins = &comp.instrs[id];
    match ins.opcode.as_str() {
        "reduce" => true,
        "transpose" => ins
            .attrs
            .dimensions
            .as_ref()
            .is_some_and(|p| p.last().is_some_and(|&l| l as usize + 1 != p.len())),
        _ => false,
    }
}

/// The heroes of `comp` (plus `extra`, instructions marked as heroes), in the order the
/// outputs reach them, and their epilogues.
pub fn epilogues(comp: &Computation, extra: &[InstrId]) -> Vec<Epilogue> {
    let hero = |id: InstrId| is_hero(comp, id) || extra.contains(&id);
    let mut outs = comp.outputs();
    let mut seen_out = HashSet::new();
    outs.retain(|o| seen_out.insert(*o));
    // Heroes in order of discovery from the outputs (operands walked depth first).
    let mut heroes: Vec<InstrId> = Vec::new();
    let mut seen = HashSet::new();
    for &r in &outs {
        let mut stack = vec![r];
        while let Some(v) = stack.pop() {
            if !seen.insert(v) {
                continue;
            }
            if hero(v) && !heroes.contains(&v) {
                heroes.push(v);
            }
            stack.extend(comp.instrs[v].operands.iter().rev().copied());
        }
    }
    let users = comp.users();
    heroes
        .iter()
        .map(|&h| {
            let reach = super::fusion::forward(comp, &users, h, &|v| v != h && hero(v));
            let roots: Vec<InstrId> = outs
                .iter()
                .copied()
                .filter(|o| reach[*o].is_some())
                .collect();
            let maps = roots
                .iter()
                .map(|&o| reach[o].clone().unwrap_or_default())
                .collect();
            let mut subgraph = Vec::new();
            let mut injected = vec![h];
            let mut seen = HashSet::new();
            let mut stack: Vec<InstrId> = roots.iter().rev().copied().collect();
            while let Some(v) = stack.pop() {
                if !seen.insert(v) {
                    continue;
                }
                if hero(v) {
                    if !injected.contains(&v) {
                        injected.push(v);
                    }
                    continue;
                }
                if comp.instrs[v].opcode == "parameter" {
                    continue;
                }
                subgraph.push(v);
                stack.extend(comp.instrs[v].operands.iter().rev().copied());
            }
            Epilogue {
                hero: h,
                roots,
                maps,
                subgraph,
                injected,
            }
        })
        .collect()
}

/// The epilogue function's signature (see the module documentation).
pub fn signature(comp: &Computation, e: &Epilogue) -> String {
    // One index per dimension of the hero's output (XLA's epilogue specification indexes
    // the epilogue by the hero's output index, whatever the roots' ranks).
    let rank = comp.instrs[e.hero].shape.tuple_elements()[0].dims().len();
    let mut args = signature_args(comp, rank);
    for &h in &e.injected {
        for s in comp.instrs[h].shape.tuple_elements() {
            args.push(format!("%{}: {}", comp.instrs[h].name, mlir_elem(s.elem())));
        }
    }
    let results: Vec<String> = e
        .roots
        .iter()
        .flat_map(|&r| comp.instrs[r].shape.tuple_elements().iter())
        .map(|s| mlir_elem(s.elem()))
        .collect();
    format!("({}) -> ({})", args.join(", "), results.join(", "))
}

/// The epilogues as text, one block per hero.
pub fn describe(comp: &Computation, es: &[Epilogue]) -> String {
    let name = |i: InstrId| comp.instrs[i].name.clone();
    if es.is_empty() {
        return format!(
            "`{}` has no heroes (no reduce, no transpose of the minor-most dimension): one loop over its outputs",
            comp.name
        );
    }
    let mut out = Vec::new();
    for e in es {
        let h = &comp.instrs[e.hero];
        out.push(format!("hero {} ({})", name(e.hero), h.opcode));
        if e.roots.is_empty() {
            out.push("  reaches no root (read only by other heroes)".into());
            continue;
        }
        if e.subgraph.is_empty() {
            out.push("  epilogue: empty (the hero is a root)".into());
        } else {
            let members: Vec<String> = e.subgraph.iter().map(|&i| name(i)).collect();
            out.push(format!("  epilogue: {}", members.join(", ")));
        }
        if e.injected.len() > 1 {
            let inj: Vec<String> = e.injected[1..].iter().map(|&i| name(i)).collect();
            out.push(format!("  also injected: {}", inj.join(", ")));
        }
        for (r, maps) in e.roots.iter().zip(&e.maps) {
            out.push(format!("  to root {}:", name(*r)));
            for m in maps {
                out.push(format!("    {m}"));
            }
        }
        out.push(format!("  signature: {}", signature(comp, e)));
    }
    out.join("\n")
}
