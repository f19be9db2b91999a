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
//! `describe` prints each function's signature in seed 003's form: one tensor per
//! computation parameter (a scalar as its element type, a non-default layout as the
//! tensor's encoding), one index per dimension of the root's output, one result per
//! root (`(%p0: tensor<16x16xf32>, %i0: index, %i1: index) -> (f32)`).
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
    /// An element of the root tuple whose shape differs from the first element's.
    OwnOutputShape,
    /// Marked as a subgraph root by the caller (as XLA's emitters mark their heroes).
    Marked,
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
    partition_with_roots(comp, &[])
}

/// The partition with `extra` instructions forced to root functions of their own (XLA's
/// `is_subgraph_root`: the reduction and transpose emitters mark their heroes so each hero
/// is computed once, by its own scheme, and its users call it).
pub fn partition_with_roots(comp: &Computation, extra: &[InstrId]) -> Partition {
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
        } else if extra.contains(&id) {
            Some(Cut::Marked)
        } else if comp.instrs[comp.root].opcode == "tuple"
            && us == [comp.root]
            && ins.dims() != comp.instrs[comp.root].dims()
        {
            // An output of a multi-output computation whose shape differs from the first
            // output's: it cannot share the root function's indices (seed 003: the
            // results of one function share one index per output dimension).
            Some(Cut::OwnOutputShape)
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
            Cut::OwnOutputShape => {
                "an output of the computation with a shape of its own".to_string()
            }
            Cut::Marked => "marked as a subgraph root (roots=)".to_string(),
        };
        out.push(format!("  cut: {why}"));
        out.push(format!("  signature: {}", signature(comp, f)));
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

/// MLIR's spelling of an HLO element type: `s32` → `i32`, `u8` → `ui8`, `pred` → `i1`,
/// `f8e4m3fn` → `f8E4M3FN`, `c64` → `complex<f32>`; other floats as written.
pub fn mlir_elem(e: &str) -> String {
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    match e {
        "pred" => "i1".into(),
        "c64" => "complex<f32>".into(),
        "c128" => "complex<f64>".into(),
        _ if e.starts_with('s') && digits(&e[1..]) => format!("i{}", &e[1..]),
        _ if e.starts_with('u') && digits(&e[1..]) => format!("ui{}", &e[1..]),
        _ if e.starts_with("f8") && e.len() > 2 => format!("f8{}", e[2..].to_uppercase()),
        _ => e.to_string(),
    }
}

/// `tensor<16x16xf32>`; `tensor<f32>` for a scalar.
pub fn tensor_type(dims: &[i64], elem: &str) -> String {
    let mut s = String::from("tensor<");
    for d in dims {
        s.push_str(&format!("{d}x"));
    }
    s.push_str(&mlir_elem(elem));
    s.push('>');
    s
}

/// A computation parameter's type in a function signature, as XLA's emitters type it: a
/// scalar as its element type (`f32`), an array as a tensor, with its layout as the
/// tensor's encoding (the minor-to-major order, `dense<[0, 1]> : tensor<2xi64>`) only when
/// it is not the default row-major one (a default layout adds no encoding).
pub fn param_type(s: &super::Shape) -> String {
    if s.is_tuple() {
        let parts: Vec<String> = s.tuple_elements().iter().map(param_type).collect();
        return format!("tuple<{}>", parts.join(", "));
    }
    if s.dims().is_empty() {
        return mlir_elem(s.elem());
    }
    let t = tensor_type(s.dims(), s.elem());
    if s.has_default_layout() {
        return t;
    }
    let m2m: Vec<String> = s.minor_to_major().iter().map(|k| k.to_string()).collect();
    format!(
        "{}, dense<[{}]> : tensor<{}xi64>>",
        &t[..t.len() - 1],
        m2m.join(", "),
        m2m.len()
    )
}

/// The arguments every subgraph function starts with (seed 003): `%pK: tensor<...>` per
/// parameter of `comp` (a scalar as its element type, see [`param_type`]), then `%iJ: index` per dimension of the `rank`-dimensional output
/// it computes an element of. Shared by partition functions and epilogues.
pub fn signature_args(comp: &Computation, rank: usize) -> Vec<String> {
    let mut args: Vec<String> = comp
        .parameters()
        .iter()
        .enumerate()
        .map(|(k, &p)| format!("%p{k}: {}", param_type(&comp.instrs[p].shape)))
        .collect();
    args.extend((0..rank).map(|j| format!("%i{j}: index")));
    args
}

/// Seed 003's function signature for a subgraph: one tensor per parameter of the
/// computation, one index per dimension of the subgraph root's output, one result per
/// root (each element of a tuple-shaped root, as a variadic reduce has).
pub fn signature(comp: &Computation, f: &Function) -> String {
    let root = &comp.instrs[f.root];
    let args = signature_args(comp, root.rank());
    let results: Vec<String> = if root.opcode == "tuple" {
        // The root tuple's function returns the outputs that share its indices (those of
        // another shape root functions of their own).
        root.operands
            .iter()
            .map(|&o| &comp.instrs[o])
            .filter(|o| o.dims() == root.dims())
            .flat_map(|o| o.shape.tuple_elements().iter())
            .map(|s| mlir_elem(s.elem()))
            .collect()
    } else {
        root.shape
            .tuple_elements()
            .iter()
            .map(|s| mlir_elem(s.elem()))
            .collect()
    };
    format!("({}) -> ({})", args.join(", "), results.join(", "))
}

#[cfg(test)]
mod signature_tests {
    use super::{mlir_elem, tensor_type};

    #[test]
    fn element_types_in_mlir_spelling() {
        assert_eq!(mlir_elem("s32"), "i32");
        assert_eq!(mlir_elem("u8"), "ui8");
        assert_eq!(mlir_elem("pred"), "i1");
        assert_eq!(mlir_elem("bf16"), "bf16");
        assert_eq!(mlir_elem("f8e4m3fn"), "f8E4M3FN");
        assert_eq!(mlir_elem("c64"), "complex<f32>");
        assert_eq!(tensor_type(&[16, 16], "f32"), "tensor<16x16xf32>");
        assert_eq!(tensor_type(&[], "s64"), "tensor<i64>");
    }

    #[test]
    fn parameter_types_in_signatures() {
        use super::param_type;
        use crate::hlo::Shape;
        let arr = |dims: &[i64], layout: Option<Vec<usize>>| Shape::Array {
            elem: "f32".into(),
            dims: dims.to_vec(),
            layout,
        };
        assert_eq!(param_type(&arr(&[], None)), "f32");
        assert_eq!(param_type(&arr(&[4, 8], None)), "tensor<4x8xf32>");
        assert_eq!(
            param_type(&arr(&[4, 8], Some(vec![1, 0]))),
            "tensor<4x8xf32>"
        );
        assert_eq!(
            param_type(&arr(&[4, 8], Some(vec![0, 1]))),
            "tensor<4x8xf32, dense<[0, 1]> : tensor<2xi64>>"
        );
        assert_eq!(
            param_type(&arr(&[2, 3, 4], Some(vec![1, 2, 0]))),
            "tensor<2x3x4xf32, dense<[1, 2, 0]> : tensor<3xi64>>"
        );
    }
}
