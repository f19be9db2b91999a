//! Elementwise ops (unary, binary, ternary: `add`, `select`, `clamp`, `compare`,
//! `convert`, ...): every output element reads the element at the same index of each
//! operand; a scalar operand (clamp's bounds) is read by every element.
//!
//! ```text
//! output = f32[10, 20] add(p0, p1)
//! output → operand 0:  (d0, d1) -> (d0, d1), domain: d0 in [0, 9], d1 in [0, 19]
//! operand 0 → output:  (d0, d1) -> (d0, d1), domain: d0 in [0, 9], d1 in [0, 19]
//! ```
//!
//! Shown running in `sessions/hlo/elementwise.ixm`.

use super::{build, d, Cx, Family};
use crate::map::IndexingMap;

pub static OPCODES: &[&str] = &[
    "abs",
    "add",
    "and",
    "atan2",
    "bitcast-convert",
    "cbrt",
    "ceil",
    "clamp",
    "clz",
    "compare",
    "complex",
    "convert",
    "copy",
    "cosine",
    "count-leading-zeros",
    "divide",
    "erf",
    "exponential",
    "exponential-minus-one",
    "floor",
    "imag",
    "is-finite",
    "log",
    "log-plus-one",
    "logistic",
    "map",
    "maximum",
    "minimum",
    "multiply",
    "negate",
    "not",
    "or",
    "popcnt",
    "power",
    "real",
    "reduce-precision",
    "remainder",
    "round-nearest-afz",
    "round-nearest-even",
    "rsqrt",
    "select",
    "shift-left",
    "shift-right-arithmetic",
    "shift-right-logical",
    "sign",
    "sine",
    "sqrt",
    "stochastic-convert",
    "subtract",
    "tan",
    "tanh",
    "xor",
];

pub static FAMILY: Family = Family {
    name: "elementwise",
    check,
    out_to_in,
    in_to_out,
    approximate: None,
};

/// How many operands an opcode takes (XLA's operation semantics): `None` for `map`, which
/// takes one for each parameter of its computation.
fn arity(opcode: &str) -> Option<usize> {
    const BINARY: &[&str] = &[
        "add",
        "and",
        "atan2",
        "compare",
        "complex",
        "divide",
        "maximum",
        "minimum",
        "multiply",
        "or",
        "power",
        "remainder",
        "shift-left",
        "shift-right-arithmetic",
        "shift-right-logical",
        "stochastic-convert",
        "subtract",
        "xor",
    ];
    match opcode {
        "map" => None,
        "select" | "clamp" => Some(3),
        o if BINARY.contains(&o) => Some(2),
        _ => Some(1),
    }
}

fn check(cx: &Cx) -> Result<(), String> {
    if cx.n_operands() == 0 {
        return Err(format!("`{}` needs at least one operand", cx.instr.opcode));
    }
    if let Some(n) = arity(&cx.instr.opcode) {
        if cx.n_operands() != n {
            return Err(format!(
                "`{}` takes {n} operand{}, not {}",
                cx.instr.opcode,
                if n == 1 { "" } else { "s" },
                cx.n_operands()
            ));
        }
    }
    for k in 0..cx.n_operands() {
        let o = cx.opd(k);
        if o != cx.out() && !o.is_empty() {
            return Err(format!(
                "operand {k} (`{}`) has shape {} but the output has {}",
                cx.operand(k).name,
                cx.operand(k).shape,
                cx.instr.shape
            ));
        }
    }
    Ok(())
}

fn out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    let out = cx.out();
    (0..cx.n_operands())
        .map(|k| {
            let results = if cx.opd(k).is_empty() {
                vec![]
            } else {
                (0..out.len()).map(d).collect()
            };
            build(out, &[], &[], results, vec![])
        })
        .collect()
}

fn in_to_out(cx: &Cx, k: usize) -> IndexingMap {
    let out = cx.out();
    if cx.opd(k).is_empty() && !out.is_empty() {
        // A scalar operand feeds every output element.
        let results = (0..out.len()).map(d).collect();
        return build(&[], out, &[], results, vec![]);
    }
    build(out, &[], &[], (0..out.len()).map(d).collect(), vec![])
}
