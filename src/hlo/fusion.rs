//! Indexing through a whole computation (a fusion): per-op maps composed from the root(s)
//! to every parameter, each composition simplified, and the maps reaching one parameter
//! deduplicated.
//!
//! ```text
//! f {
//!   p0 = f32[1000, 1000] parameter(0)
//!   t  = f32[1000, 1000]{0, 1} transpose(p0), dimensions={1, 0}
//!   ROOT a0 = f32[1000, 1000] add(p0, t)
//! }
//! output → parameter 0:  (d0, d1) -> (d0, d1)  and  (d0, d1) -> (d1, d0)
//! ```
//!
//! A parameter that an output does not read gets one `KNOWN EMPTY` map.
//!
//! Instructions are visited once each, users before operands, and every map set is
//! deduplicated as it is built, so the work is linear in the number of instructions times
//! the number of distinct maps per instruction (no path enumeration). A `fusion` or `call`
//! instruction inside the computation is looked through when its callee is in the module.
//! Shown running in `sessions/hlo/fusion.ixm`.

use super::ops::{self, MapSet};
use super::{Computation, InstrId, Module};
use crate::map::{compose, IndexingMap};
use std::collections::{HashMap, HashSet};

/// Output-to-input maps of a computation: `outputs[i][p]` are the maps from output `i`
/// (the root, or element `i` of a tuple root) to parameter number `p`.
#[derive(Clone, Debug)]
pub struct FusionIndexing {
    pub outputs: Vec<Vec<MapSet>>,
}

/// A deduplicating set of maps, in insertion order.
#[derive(Default, Clone)]
struct Set {
    maps: Vec<IndexingMap>,
    seen: HashSet<IndexingMap>,
}

/// Most distinct maps kept for one tensor. Past it the set becomes one UNDEFINED map (an
/// unknown access, always sound): 20 levels of `c_i = concatenate(c_{i-1}, c_{i-1})` read
/// the parameter through 2^20 distinct maps, which took 71 s and 1.2 GB to list.
pub const MAX_MAPS_PER_TENSOR: usize = 1024;

impl Set {
    fn insert(&mut self, m: IndexingMap) {
        if self.maps.len() == 1 && self.maps[0].is_undefined() && self.seen.is_empty() {
            return; // already given up on this tensor
        }
        if !self.seen.contains(&m) {
            if self.maps.len() >= MAX_MAPS_PER_TENSOR {
                self.seen.clear();
                self.maps = vec![IndexingMap::undefined()];
                return;
            }
            self.seen.insert(m.clone());
            self.maps.push(m);
        }
    }
}

/// `a` then `b`, simplified when there is anything to simplify, with default names.
pub fn compose_simplified(a: &IndexingMap, b: &IndexingMap) -> IndexingMap {
    let m = match compose(a, b) {
        Ok(m) => m,
        Err(_) => return IndexingMap::undefined(),
    };
    finish(m)
}

/// Simplifies a composed map when it has symbols, constraints or divisions (a plain
/// linear map is already canonical), and names its variables by position. The simplifier
/// does all the folding reshapes need (quotients and remainders of linearized indices
/// recombined, nested divisions fused).
pub fn finish(mut m: IndexingMap) -> IndexingMap {
    if m.is_undefined() {
        return m;
    }
    let plain =
        m.constraints.is_empty() && !m.has_symbols() && !m.results.iter().any(|r| r.has_div());
    if plain {
        m.is_simplified = false;
        ops::default_names(&mut m);
        return m;
    }
    ops::finish(m)
}

/// Instructions reachable from `roots`, users before operands.
pub fn reverse_topological(comp: &Computation, roots: &[InstrId]) -> Vec<InstrId> {
    let n = comp.instrs.len();
    let mut state = vec![0u8; n];
    let mut post = Vec::new();
    for &r in roots {
        let mut stack = vec![(r, 0usize)];
        while let Some((v, i)) = stack.pop() {
            if i == 0 {
                if state[v] != 0 {
                    continue;
                }
                state[v] = 1;
            }
            let ops = &comp.instrs[v].operands;
            if i < ops.len() {
                stack.push((v, i + 1));
                if state[ops[i]] == 0 {
                    stack.push((ops[i], 0));
                }
            } else {
                state[v] = 2;
                post.push(v);
            }
        }
    }
    post.reverse();
    post
}

/// Per-op output-to-input maps, looking through `fusion`/`call` instructions whose
/// computation is in `module`.
pub fn op_output_to_input(module: &Module, comp: &Computation, id: InstrId) -> Vec<MapSet> {
    op_output_to_input_memo(module, comp, id, &mut Callees::new())
}

/// Root-to-parameter maps of the computations called so far, by name; `None` while a
/// computation's own maps are being built (a call back into it is a cycle: opaque).
type Callees = HashMap<String, Option<Vec<MapSet>>>;

/// The computation a `fusion`/`call` instruction of `comp` calls, when indexing looks
/// through it (in the module, not `comp` itself, a single output).
fn looked_through<'m>(
    module: &'m Module,
    comp: &Computation,
    id: InstrId,
) -> Option<&'m Computation> {
    let ins = &comp.instrs[id];
    if !matches!(ins.opcode.as_str(), "fusion" | "call") {
        return None;
    }
    let callee = ins
        .attrs
        .calls
        .as_deref()
        .or(ins.attrs.to_apply.as_deref())
        .and_then(|c| module.computation(c))?;
    (callee.name != comp.name && !callee.instrs[callee.root].shape.is_tuple()).then_some(callee)
}

fn op_output_to_input_memo(
    module: &Module,
    comp: &Computation,
    id: InstrId,
    memo: &mut Callees,
) -> Vec<MapSet> {
    let ins = &comp.instrs[id];
    if let Some(callee) = looked_through(module, comp, id) {
        let mut per_operand = vec![vec![IndexingMap::undefined()]; ins.operands.len()];
        if let Some(fi) = callee_maps(module, callee, memo) {
            for (p, maps) in fi.into_iter().enumerate() {
                if p < per_operand.len() {
                    per_operand[p] = maps;
                }
            }
        }
        return per_operand;
    }
    ops::output_to_input(comp, id)
}

/// The root-to-parameter maps of `callee`, building those of the computations it calls
/// first, deepest first, with an explicit stack: a chain of thousands of fusions each
/// calling the next costs no stack depth. `None` for a computation that calls itself
/// (directly or not): it stays opaque (UNDEFINED), as in [`super::inline::flatten`].
fn callee_maps(module: &Module, callee: &Computation, memo: &mut Callees) -> Option<Vec<MapSet>> {
    if let Some(done) = memo.get(&callee.name) {
        return done.clone();
    }
    // (computation, whether its callees have been pushed)
    let mut stack: Vec<(&Computation, bool)> = vec![(callee, false)];
    while let Some((c, expanded)) = stack.pop() {
        if !expanded {
            if memo.contains_key(&c.name) {
                continue; // done, or in progress (a cycle)
            }
            memo.insert(c.name.clone(), None);
            stack.push((c, true));
            for id in 0..c.instrs.len() {
                if let Some(k) = looked_through(module, c, id) {
                    if !memo.contains_key(&k.name) {
                        stack.push((k, false));
                    }
                }
            }
        } else {
            let maps = output_to_input_from_memo(module, c, c.root, memo);
            memo.insert(c.name.clone(), Some(maps));
        }
    }
    memo.get(&callee.name).cloned().flatten()
}

/// Output-to-input maps from `root` (one output) to every parameter, by number.
pub fn output_to_input_from(module: &Module, comp: &Computation, root: InstrId) -> Vec<MapSet> {
    output_to_input_from_memo(module, comp, root, &mut Callees::new())
}

fn output_to_input_from_memo(
    module: &Module,
    comp: &Computation,
    root: InstrId,
    memo: &mut Callees,
) -> Vec<MapSet> {
    let order = reverse_topological(comp, &[root]);
    let mut sets: Vec<Option<Set>> = vec![None; comp.instrs.len()];
    let mut start = Set::default();
    start.insert(IndexingMap::identity(comp.instrs[root].dims()));
    sets[root] = Some(start);
    let params = comp.parameters();
    let mut out: Vec<MapSet> = vec![not_read(); params.len()];
    for id in order {
        let Some(set) = sets[id].take() else { continue };
        let ins = &comp.instrs[id];
        if ins.opcode == "parameter" {
            if let Some(p) = params.iter().position(|&x| x == id) {
                out[p] = set.maps;
            }
            continue;
        }
        let per_operand = op_output_to_input_memo(module, comp, id, memo);
        for (k, &opnd) in ins.operands.iter().enumerate() {
            let Some(op_maps) = per_operand.get(k) else {
                continue;
            };
            let target = sets[opnd].get_or_insert_with(Set::default);
            for m in &set.maps {
                for o in op_maps {
                    target.insert(compose_simplified(m, o));
                }
            }
        }
    }
    out
}

/// The map set of a tensor that is not read at all: one KNOWN EMPTY map.
pub fn not_read() -> MapSet {
    let mut m = IndexingMap::new(vec![], vec![], vec![], vec![], vec![]);
    m.status = crate::map::Status::KnownEmpty;
    vec![m]
}

/// Output-to-input maps of every output of the computation to every parameter. Nested
/// fusions and calls are inlined first ([`super::inline::flatten`]), so the outputs are
/// those of the flattened computation: a root that is a multi-output fusion counts as
/// its elements.
pub fn output_to_input(module: &Module, comp: &Computation) -> FusionIndexing {
    let flat;
    let comp = if super::inline::has_nesting(module, comp) {
        flat = super::inline::flatten(module, comp);
        &flat
    } else {
        comp
    };
    FusionIndexing {
        outputs: comp
            .outputs()
            .into_iter()
            .map(|r| output_to_input_from(module, comp, r))
            .collect(),
    }
}

/// Input-to-output maps from parameter number `p` to every output of the computation,
/// through nested fusions and calls in `module` (inlined first, as for
/// [`output_to_input`]).
pub fn input_to_output_in(module: &Module, comp: &Computation, p: usize) -> Vec<MapSet> {
    if super::inline::has_nesting(module, comp) {
        input_to_output(&super::inline::flatten(module, comp), p)
    } else {
        input_to_output(comp, p)
    }
}

/// Input-to-output maps from parameter number `p` to every output of the computation
/// (nested fusions stay opaque: see [`input_to_output_in`]).
pub fn input_to_output(comp: &Computation, p: usize) -> Vec<MapSet> {
    let outputs = comp.outputs();
    let Some(&start) = comp.parameters().get(p) else {
        return vec![Vec::new(); outputs.len()];
    };
    let sets = forward(comp, &comp.users(), start, &|_| false);
    outputs
        .iter()
        .map(|&o| sets[o].clone().unwrap_or_default())
        .collect()
}

/// Input-to-output maps from `start`'s output to every instruction it reaches through
/// users, not entering instructions where `stop` holds (the epilogues stop at other heroes);
/// `None` where it is not reached.
pub(crate) fn forward(
    comp: &Computation,
    users: &[Vec<InstrId>],
    start: InstrId,
    stop: &dyn Fn(InstrId) -> bool,
) -> Vec<Option<MapSet>> {
    let mut order = reverse_topological(comp, &comp.outputs());
    order.reverse(); // operands before users
    let mut sets: Vec<Option<Set>> = vec![None; comp.instrs.len()];
    let mut s = Set::default();
    s.insert(IndexingMap::identity(comp.instrs[start].dims()));
    sets[start] = Some(s);
    for &id in &order {
        let Some(set) = sets[id].clone() else {
            continue;
        };
        let mut done = HashSet::new();
        for &u in &users[id] {
            if !done.insert(u) || stop(u) {
                continue;
            }
            let ins = &comp.instrs[u];
            if ins.opcode == "tuple" && u == comp.root {
                continue;
            }
            for (k, &o) in ins.operands.iter().enumerate() {
                if o != id {
                    continue;
                }
                let step = ops::input_to_output(comp, u, k);
                let target = sets[u].get_or_insert_with(Set::default);
                for m in &set.maps {
                    for st in &step {
                        target.insert(compose_simplified(m, st));
                    }
                }
            }
        }
    }
    sets.into_iter().map(|s| s.map(|s| s.maps)).collect()
}
