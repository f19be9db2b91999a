//! The CPU backend against the reference on small fusions of each kind: elementwise through
//! a reshape, transpose, broadcast, row and column reduction; simplified and naive agree.

use ixmap::gpu::bench::{self, Device, Options};
use ixmap::gpu::spec::{BinOp, Body, ElemType, Function, KernelSpec, Tensor, UnOp};
use ixmap::map::IndexingMap;
use ixmap::syntax;

fn map(text: &str) -> IndexingMap {
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
        inputs: vec![p0, p1],
        output: Tensor::row_major("out", ElemType::F32, &[a * b, c]),
        functions: vec![Function {
            name: "root".into(),
            dims: vec![a * b, c],
            body,
        }],
    }
}

#[test]
fn cpu_matches_reference() {
    let opts = Options {
        device: Device::Cpu,
        reps: 1,
        warmups: 0,
        progress: false,
    };
    let spec = reshape_add(3, 5, 8);
    let o = bench::run(&spec, &opts, true, false).expect("runs and verifies");
    assert_eq!(o.variants.len(), 2);
    assert!(o.variants.iter().all(|v| v.verified));
}

#[test]
fn print_sources() {
    if std::env::var("IXMAP_SHOW").is_ok() {
        let spec = reshape_add(3, 5, 8);
        for naive in [false, true] {
            println!(
                "{}",
                ixmap::gpu::emit::cpu::emit(&spec, naive)
                    .expect("emits")
                    .source
            );
        }
    }
}
