//! Fusions of each kind, built directly as `KernelSpec`s (shared by tests and benches).

use ixmap::gpu::spec::{BinOp, Body, ElemType, Function, KernelSpec, Tensor, UnOp};
use ixmap::map::IndexingMap;
use ixmap::syntax;

pub fn map(text: &str) -> IndexingMap {
    let lit = syntax::parse_map_lit(text).expect("test map parses");
    ixmap::session::build::build_map(&lit).expect("test map builds")
}

pub fn reshape_add(a: i64, b: i64, c: i64) -> KernelSpec {
    // out[a*b, c] = exp(p0[a, b, c]) + p1[a*b, c], p0 reshaped.
    let p0 = Tensor::row_major("p0", ElemType::F32, &[a, b, c]);
    let p1 = Tensor::row_major("p1", ElemType::F32, &[a * b, c]);
    let reshape = map(&format!(
        "(d0, d1) -> (d0 floordiv {b}, d0 mod {b}, d1), domain: d0 in [0, {}], d1 in [0, {}]",
        a * b - 1,
        c - 1
    ));
    let body = Body::Binary(
        BinOp::Add,
        Box::new(Body::Unary(
            UnOp::Exp,
            Box::new(Body::Load {
                input: 0,
                map: reshape,
            }),
        )),
        Box::new(Body::Load {
            input: 1,
            map: IndexingMap::identity(&[a * b, c]),
        }),
    );
    KernelSpec {
        name: "reshape_add".into(),
        more_outputs: vec![],
        root: ixmap::gpu::spec::Root::Elementwise,
        inputs: vec![p0, p1],
        output: Tensor::row_major("out", ElemType::F32, &[a * b, c]),
        functions: vec![Function {
            name: "root".into(),
            dims: vec![a * b, c],
            body,
        }],
        xla_tile: None,
    }
}

/// `out[a*b, c] = p0[a, b, c] + p1[a*b, c]`, p0 reshaped: index arithmetic and memory only.
pub fn reshape_add_plain(a: i64, b: i64, c: i64) -> KernelSpec {
    let mut spec = reshape_add(a, b, c);
    if let Body::Binary(op, x, y) = &spec.functions[0].body {
        if let Body::Unary(_, inner) = x.as_ref() {
            spec.functions[0].body = Body::Binary(*op, inner.clone(), y.clone());
        }
    }
    spec.name = "reshape_add_plain".into();
    spec
}

pub fn transpose(a: i64, b: i64) -> KernelSpec {
    let m = map(&format!(
        "(d0, d1) -> (d1, d0), domain: d0 in [0, {}], d1 in [0, {}]",
        b - 1,
        a - 1
    ));
    KernelSpec {
        name: "transpose".into(),
        more_outputs: vec![],
        root: ixmap::gpu::spec::Root::Elementwise,
        inputs: vec![Tensor::row_major("p0", ElemType::F32, &[a, b])],
        output: Tensor::row_major("out", ElemType::F32, &[b, a]),
        functions: vec![Function {
            name: "root".into(),
            dims: vec![b, a],
            body: Body::Load { input: 0, map: m },
        }],
        xla_tile: None,
    }
}

pub fn broadcast_mul(a: i64, b: i64) -> KernelSpec {
    let m = map(&format!(
        "(d0, d1) -> (d1), domain: d0 in [0, {}], d1 in [0, {}]",
        a - 1,
        b - 1
    ));
    let body = Body::Binary(
        BinOp::Mul,
        Box::new(Body::Load {
            input: 0,
            map: IndexingMap::identity(&[a, b]),
        }),
        Box::new(Body::Load { input: 1, map: m }),
    );
    KernelSpec {
        name: "broadcast_mul".into(),
        more_outputs: vec![],
        root: ixmap::gpu::spec::Root::Elementwise,
        inputs: vec![
            Tensor::row_major("p0", ElemType::F32, &[a, b]),
            Tensor::row_major("p1", ElemType::F32, &[b]),
        ],
        output: Tensor::row_major("out", ElemType::F32, &[a, b]),
        functions: vec![Function {
            name: "root".into(),
            dims: vec![a, b],
            body,
        }],
        xla_tile: None,
    }
}

/// `out[i] = sum_j exp(p0[i, j])` (row) or `out[j] = sum_i exp(p0[i, j])` (column), with the
/// exp in its own partition.
pub fn reduce(a: i64, b: i64, row: bool) -> KernelSpec {
    let (out, m) = if row {
        (
            a,
            map(&format!(
                "(d0)[s0] -> (d0, s0), domain: d0 in [0, {}], s0 in [0, {}]",
                a - 1,
                b - 1
            )),
        )
    } else {
        (
            b,
            map(&format!(
                "(d0)[s0] -> (s0, d0), domain: d0 in [0, {}], s0 in [0, {}]",
                b - 1,
                a - 1
            )),
        )
    };
    KernelSpec {
        name: "reduce".into(),
        more_outputs: vec![],
        root: ixmap::gpu::spec::Root::Elementwise,
        inputs: vec![Tensor::row_major("p0", ElemType::F32, &[a, b])],
        output: Tensor::row_major("out", ElemType::F32, &[out]),
        functions: vec![
            Function {
                name: "root".into(),
                dims: vec![out],
                body: Body::Reduce {
                    op: BinOp::Add,
                    init: 0.0,
                    func: 1,
                    map: m,
                },
            },
            Function {
                name: "exp".into(),
                dims: vec![a, b],
                body: Body::Unary(
                    UnOp::Exp,
                    Box::new(Body::Load {
                        input: 0,
                        map: IndexingMap::identity(&[a, b]),
                    }),
                ),
            },
        ],
        xla_tile: None,
    }
}

/// `out = transpose(p0), dimensions=perm`: output dim `i` is input dim `perm[i]`.
#[allow(dead_code)]
pub fn permute(in_dims: &[i64], perm: &[usize]) -> KernelSpec {
    let out_dims: Vec<i64> = perm.iter().map(|&p| in_dims[p]).collect();
    let mut inv = vec![0usize; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    let dims: Vec<String> = (0..perm.len()).map(|i| format!("d{i}")).collect();
    let results: Vec<String> = inv.iter().map(|&i| format!("d{i}")).collect();
    let domain: Vec<String> = out_dims
        .iter()
        .enumerate()
        .map(|(i, n)| format!("d{i} in [0, {}]", n - 1))
        .collect();
    let m = map(&format!(
        "({}) -> ({}), domain: {}",
        dims.join(", "),
        results.join(", "),
        domain.join(", ")
    ));
    let name: String = perm.iter().map(|p| p.to_string()).collect();
    KernelSpec {
        name: format!("transpose_{name}"),
        more_outputs: vec![],
        root: ixmap::gpu::spec::Root::Elementwise,
        inputs: vec![Tensor::row_major("p0", ElemType::F32, in_dims)],
        output: Tensor::row_major("out", ElemType::F32, &out_dims),
        functions: vec![Function {
            name: "root".into(),
            dims: out_dims.clone(),
            body: Body::Load { input: 0, map: m },
        }],
        xla_tile: None,
    }
}
