//! Partitioning a computation into functions (seed 003, XLA's computation partitioner):
//! an instruction is emitted inside its users' function only when all its users are in
//! one function and read it through the same indices; otherwise it becomes the root of a
//! function of its own, which the users call (with their own indices) instead of
//! recomputing it inline. That keeps generated code linear in the graph's size.
//!
//! ```text
//!      param
//!        |
//!       log                  function 0: add, transpose   (root: add)
//!       |  \                 function 1: log              (add reads log at (d0, d1),
//!       |  transpose                                       transpose at (d1, d0))
//!       |  /
//!       add
//! ```
//!
//! Parameters are not part of any function (they are read with `tensor.extract`).
//! Each instruction is visited once, users first, with one composition per use, so the
//! cost is linear in the number of edges (see `benches/hlo.rs`, chains of diamonds).

use super::fusion::{compose_simplified, reverse_topological};
use super::{ops, Computation, InstrId};
use crate::map::IndexingMap;

/// Why an instruction roots its own function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cut {
    /// The computation's root.
    ComputationRoot,
    /// Users in several functions.
    UsersInDifferentFunctions(Vec<InstrId>),
    /// All users in one function, but reading through different indices:
    /// `(user, map from the function root's index to this instruction's)`.
    DifferentIndices(Vec<(InstrId, IndexingMap)>),
    /// A user's indexing is unknown.
    UnknownIndexing(InstrId),
}

#[derive(Clone, Debug)]
pub struct Function {
    pub root: InstrId,
    /// Instructions in the function, root first, users before operands.
    pub instrs: Vec<InstrId>,
    pub cut: Cut,
}

#[derive(Clone, Debug)]
pub struct Partition {
    pub functions: Vec<Function>,
    /// Function of each instruction (`None` for parameters and unreachable ones).
    pub function_of: Vec<Option<usize>>,
}

pub fn partition(comp: &Computation) -> Partition {
    let order = reverse_topological(comp, &[comp.root]);
    let n = comp.instrs.len();
    let users = comp.users();
    let mut function_of: Vec<Option<usize>> = vec![None; n];
    // Map from the function root's index to this instruction's index.
    let mut map_of: Vec<Option<IndexingMap>> = vec![None; n];
    let mut functions: Vec<Function> = Vec::new();
    // Per-op maps are computed once per user.
    let mut op_maps: Vec<Option<Vec<ops::MapSet>>> = vec![None; n];
    for id in order {
        let ins = &comp.instrs[id];
        if ins.opcode == "parameter" {
            continue;
        }
        let mut us: Vec<InstrId> = users[id].clone();
        us.sort();
        us.dedup();
        let cut = if id == comp.root {
            Some(Cut::ComputationRoot)
        } else {
            let groups: Vec<Option<usize>> = us.iter().map(|&u| function_of[u]).collect();
            if groups.iter().any(|g| *g != groups[0]) || groups.is_empty() {
                Some(Cut::UsersInDifferentFunctions(us.clone()))
            } else {
                let mut reads: Vec<(InstrId, IndexingMap)> = Vec::new();
                let mut unknown = None;
                for &u in &us {
                    let per = op_maps[u].get_or_insert_with(|| ops::output_to_input(comp, u));
                    let um = map_of[u].clone().unwrap_or_else(IndexingMap::undefined);
                    for (k, &o) in comp.instrs[u].operands.iter().enumerate() {
                        if o != id {
                            continue;
                        }
                        for m in per.get(k).map(|v| v.as_slice()).unwrap_or(&[]) {
                            let c = compose_simplified(&um, m);
                            if c.is_undefined() {
                                unknown = Some(u);
                            }
                            if !reads.iter().any(|(_, r)| *r == c) {
                                reads.push((u, c));
                            }
                        }
                    }
                }
                match (unknown, reads.len()) {
                    (Some(u), _) => Some(Cut::UnknownIndexing(u)),
                    (None, 1) => {
                        let g = groups[0].expect("users were assigned before their operands");
                        function_of[id] = Some(g);
                        map_of[id] = reads.pop().map(|r| r.1);
                        functions[g].instrs.push(id);
                        None
                    }
                    _ => Some(Cut::DifferentIndices(reads)),
                }
            }
        };
        if let Some(cut) = cut {
            function_of[id] = Some(functions.len());
            map_of[id] = Some(IndexingMap::identity(ins.dims()));
            functions.push(Function {
                root: id,
                instrs: vec![id],
                cut,
            });
        }
    }
    Partition {
        functions,
        function_of,
    }
}

/// The partition as text: one block per function, with the reason for each cut.
pub fn describe(comp: &Computation, p: &Partition) -> String {
    let name = |i: InstrId| comp.instrs[i].name.clone();
    let mut out = Vec::new();
    for (k, f) in p.functions.iter().enumerate() {
        let members: Vec<String> = f.instrs.iter().map(|&i| name(i)).collect();
        out.push(format!(
            "function {k} (root {}): {}",
            name(f.root),
            members.join(", ")
        ));
        let why = match &f.cut {
            Cut::ComputationRoot => "the root of the computation".to_string(),
            Cut::UsersInDifferentFunctions(us) => {
                let list: Vec<String> = us
                    .iter()
                    .map(|&u| {
                        format!(
                            "{} (function {})",
                            name(u),
                            p.function_of[u].map_or("?".into(), |g| g.to_string())
                        )
                    })
                    .collect();
                format!("its users are in different functions: {}", list.join(", "))
            }
            Cut::DifferentIndices(reads) => {
                let list: Vec<String> = reads
                    .iter()
                    .map(|(u, m)| format!("{} reads {}", name(*u), m))
                    .collect();
                format!(
                    "its users read it through different indices:\n    {}",
                    list.join("\n    ")
                )
            }
            Cut::UnknownIndexing(u) => format!("the indexing of its user {} is unknown", name(*u)),
        };
        out.push(format!("  cut: {why}"));
    }
    let params: Vec<String> = comp.parameters().iter().map(|&i| name(i)).collect();
    if !params.is_empty() {
        out.push(format!(
            "parameters (read directly by the functions): {}",
            params.join(", ")
        ));
    }
    out.join("\n")
}
