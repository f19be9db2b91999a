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

/// The op table: every elementwise opcode with its operand count, the element types its
/// operands take, and its result's element type. From XLA's operation semantics (the
/// element-wise unary functions, binary arithmetic and comparison operations, `Select`,
/// `Clamp`, `ConvertElementType`) and from what each function means: `exponential` of an
/// integer or `popcnt` of a float has no meaning, `negate` of a pred neither. `add`,
/// `multiply`, `maximum` and `minimum` take pred (XLA reduces pred with them: `or`, `and`);
/// `subtract`, `divide`, `remainder`, `power` and `atan2` do not.
///
/// ```text
/// f32[4] add(f32[4] a, f32[4] b)        ok
/// f32[4] add(f32[4] a, s32[4] b)        error: one element type (`convert` changes it)
/// pred[4] negate(pred[4] p)             error: negate takes integers, floats, complex
/// ```
#[rustfmt::skip]
pub const TABLE: &[Op] = &[
    //    opcode                     operands  takes                          gives
    op("abs",                        Some(1), INT | FLOAT | COMPLEX,        Gives::RealPart),
    op("add",                        Some(2), PRED | NUMBER,                Gives::Same),
    op("and",                        Some(2), PRED | INT,                   Gives::Same),
    op("atan2",                      Some(2), FLOAT | COMPLEX,              Gives::Same),
    op("bitcast-convert",            Some(1), ANY,                          Gives::Unchecked),
    op("cbrt",                       Some(1), FLOAT | COMPLEX,              Gives::Same),
    op("ceil",                       Some(1), FLOAT,                        Gives::Same),
    op("clamp",                      Some(3), PRED | NUMBER,                Gives::Same),
    op("clz",                        Some(1), INT,                          Gives::Same),
    op("compare",                    Some(2), PRED | NUMBER,                Gives::Pred),
    op("complex",                    Some(2), FLOAT,                        Gives::ComplexOf),
    op("convert",                    Some(1), ANY,                          Gives::Unchecked),
    op("copy",                       Some(1), ANY,                          Gives::Same),
    op("cosine",                     Some(1), FLOAT | COMPLEX,              Gives::Same),
    op("count-leading-zeros",        Some(1), INT,                          Gives::Same),
    op("divide",                     Some(2), NUMBER,                       Gives::Same),
    op("erf",                        Some(1), FLOAT,                        Gives::Same),
    op("exponential",                Some(1), FLOAT | COMPLEX,              Gives::Same),
    op("exponential-minus-one",      Some(1), FLOAT | COMPLEX,              Gives::Same),
    op("floor",                      Some(1), FLOAT,                        Gives::Same),
    op("imag",                       Some(1), FLOAT | COMPLEX,              Gives::RealPart),
    op("is-finite",                  Some(1), FLOAT,                        Gives::Pred),
    op("log",                        Some(1), FLOAT | COMPLEX,              Gives::Same),
    op("log-plus-one",               Some(1), FLOAT | COMPLEX,              Gives::Same),
    op("logistic",                   Some(1), FLOAT | COMPLEX,              Gives::Same),
    // one operand for each parameter of its computation, which decides the types
    op("map",                        None,    ANY,                          Gives::Unchecked),
    op("maximum",                    Some(2), PRED | NUMBER,                Gives::Same),
    op("minimum",                    Some(2), PRED | NUMBER,                Gives::Same),
    op("multiply",                   Some(2), PRED | NUMBER,                Gives::Same),
    op("negate",                     Some(1), NUMBER,                       Gives::Same),
    op("not",                        Some(1), PRED | INT,                   Gives::Same),
    op("or",                         Some(2), PRED | INT,                   Gives::Same),
    op("popcnt",                     Some(1), INT,                          Gives::Same),
    op("power",                      Some(2), NUMBER,                       Gives::Same),
    op("real",                       Some(1), FLOAT | COMPLEX,              Gives::RealPart),
    op("reduce-precision",           Some(1), FLOAT,                        Gives::Same),
    op("remainder",                  Some(2), INT | FLOAT,                  Gives::Same),
    op("round-nearest-afz",          Some(1), FLOAT,                        Gives::Same),
    op("round-nearest-even",         Some(1), FLOAT,                        Gives::Same),
    op("rsqrt",                      Some(1), FLOAT | COMPLEX,              Gives::Same),
    // (pred, on_true, on_false): the predicate is pred, the others any type
    op("select",                     Some(3), ANY,                          Gives::Select),
    op("shift-left",                 Some(2), INT,                          Gives::Same),
    op("shift-right-arithmetic",     Some(2), INT,                          Gives::Same),
    op("shift-right-logical",        Some(2), INT,                          Gives::Same),
    op("sign",                       Some(1), NUMBER,                       Gives::Same),
    op("sine",                       Some(1), FLOAT | COMPLEX,              Gives::Same),
    op("sqrt",                       Some(1), FLOAT | COMPLEX,              Gives::Same),
    // (operand, random bits): a float and an unsigned integer, to another type
    op("stochastic-convert",         Some(2), ANY,                          Gives::Unchecked),
    op("subtract",                   Some(2), NUMBER,                       Gives::Same),
    op("tan",                        Some(1), FLOAT | COMPLEX,              Gives::Same),
    op("tanh",                       Some(1), FLOAT | COMPLEX,              Gives::Same),
    op("xor",                        Some(2), PRED | INT,                   Gives::Same),
];

/// One row of [`TABLE`].
pub struct Op {
    pub opcode: &'static str,
    /// How many operands (XLA's operation semantics); `None` for `map`, which takes one for
    /// each parameter of its computation.
    pub arity: Option<usize>,
    /// The element-type classes its operands may have (a set of the bits below).
    pub takes: u8,
    pub gives: Gives,
}

const fn op(opcode: &'static str, arity: Option<usize>, takes: u8, gives: Gives) -> Op {
    Op {
        opcode,
        arity,
        takes,
        gives,
    }
}

/// The result's element type, from the operands'.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gives {
    /// The operands share one type, and the result has it.
    Same,
    /// The operands share one type; the result is `pred`.
    Pred,
    /// The operand's type, or a complex operand's part type (`c64` gives `f32`).
    RealPart,
    /// Two operands of one float type make the complex type of it (`f32` gives `c64`).
    ComplexOf,
    /// Operand 0 is `pred`; the other two share the result's type.
    Select,
    /// Changes the type as it says (`convert`), or as its computation does (`map`).
    Unchecked,
}

// The element-type classes of `Op::takes`, one bit each.
pub const PRED: u8 = 1;
pub const SIGNED: u8 = 2;
pub const UNSIGNED: u8 = 4;
pub const FLOAT: u8 = 8;
pub const COMPLEX: u8 = 16;
pub const OPAQUE: u8 = 32;
pub const INT: u8 = SIGNED | UNSIGNED;
pub const NUMBER: u8 = INT | FLOAT | COMPLEX;
pub const ANY: u8 = PRED | NUMBER | OPAQUE;

/// The bit of an element type's class (0 for a type XLA does not have).
pub fn class_bit(elem: &str) -> u8 {
    use crate::hlo::shape::ElemClass;
    match crate::hlo::shape::elem_class(elem) {
        Some(ElemClass::Pred) => PRED,
        Some(ElemClass::Signed) => SIGNED,
        Some(ElemClass::Unsigned) => UNSIGNED,
        Some(ElemClass::Float) => FLOAT,
        Some(ElemClass::Complex) => COMPLEX,
        Some(ElemClass::Opaque) => OPAQUE,
        None => 0,
    }
}

/// The classes of a set, in words: "integers, floats and complex numbers".
pub fn describe(takes: u8) -> String {
    let mut v: Vec<&str> = Vec::new();
    if takes & PRED != 0 {
        v.push("pred");
    }
    match takes & INT {
        INT => v.push("integers"),
        SIGNED => v.push("signed integers"),
        UNSIGNED => v.push("unsigned integers"),
        _ => {}
    }
    if takes & FLOAT != 0 {
        v.push("floats");
    }
    if takes & COMPLEX != 0 {
        v.push("complex numbers");
    }
    match v.as_slice() {
        [] => "nothing".into(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The row of an elementwise opcode.
pub fn row(opcode: &str) -> Option<&'static Op> {
    TABLE.iter().find(|o| o.opcode == opcode)
}

const NAMES: [&str; TABLE.len()] = {
    let mut names = [""; TABLE.len()];
    let mut i = 0;
    while i < TABLE.len() {
        names[i] = TABLE[i].opcode;
        i += 1;
    }
    names
};

/// The opcodes of [`TABLE`], for the op-family table.
pub static OPCODES: &[&str] = &NAMES;

pub static FAMILY: Family = Family {
    name: "elementwise",
    check,
    out_to_in,
    in_to_out,
    approximate: None,
};

/// How many operands an opcode takes: `None` for `map`.
fn arity(opcode: &str) -> Option<usize> {
    row(opcode).and_then(|o| o.arity)
}

/// Whether operand `k` may be a scalar read by every element of a larger output: only the
/// restricted broadcasts XLA's semantics name, `select`'s predicate and `clamp`'s bounds.
/// Any other operand has the output's dimensions: HLO has no implicit broadcast (XLA's
/// verifier: "Implicit broadcast is not allowed in HLO"; `XlaBuilder` writes a `broadcast`
/// for the scalar operands its `Add(x, 1)` takes).
fn may_be_scalar(opcode: &str, k: usize) -> bool {
    matches!((opcode, k), ("select", 0) | ("clamp", 0 | 2))
}

fn check(cx: &Cx) -> Result<(), String> {
    let opcode = cx.instr.opcode.as_str();
    if cx.n_operands() == 0 {
        return Err(format!("`{opcode}` needs at least one operand"));
    }
    if let Some(n) = arity(opcode) {
        if cx.n_operands() != n {
            return Err(format!(
                "`{opcode}` takes {n} operand{}, not {}",
                if n == 1 { "" } else { "s" },
                cx.n_operands()
            ));
        }
    }
    for k in 0..cx.n_operands() {
        let o = cx.opd(k);
        if o != cx.out() && !(o.is_empty() && may_be_scalar(opcode, k)) {
            let scalar = if may_be_scalar(opcode, k) {
                " (it has the output's dimensions, or is a scalar)"
            } else if o.is_empty() && !cx.out().is_empty() {
                " (HLO has no implicit broadcast: `broadcast` it first)"
            } else {
                ""
            };
            return Err(format!(
                "operand {k} (`{}`) has shape {} but the output has {}{scalar}",
                cx.operand(k).name,
                cx.operand(k).shape,
                cx.instr.shape
            ));
        }
    }
    check_types(cx)
}

/// The element types of the operands and the result against the op's row of [`TABLE`].
/// Tuples (a `select` between tuples) are left alone.
fn check_types(cx: &Cx) -> Result<(), String> {
    use crate::hlo::Shape;
    let opcode = cx.instr.opcode.as_str();
    let Some(row) = row(opcode) else {
        return Ok(());
    };
    let array = |s: &Shape| matches!(s, Shape::Array { .. });
    if !array(&cx.instr.shape) || (0..cx.n_operands()).any(|k| !array(&cx.operand(k).shape)) {
        return Ok(());
    }
    if row.gives == Gives::Unchecked {
        return Ok(());
    }
    let out = cx.instr.shape.elem();
    let ty = |k: usize| cx.operand(k).shape.elem();
    let name = |k: usize| cx.operand(k).name.as_str();
    // The operands that share one type: all but select's predicate.
    let first = if row.gives == Gives::Select { 1 } else { 0 };
    if row.gives == Gives::Select && ty(0) != "pred" {
        return Err(format!(
            "`select`'s predicate (operand 0, `{}`) must be pred, not {}",
            name(0),
            ty(0)
        ));
    }
    for k in first + 1..cx.n_operands() {
        if ty(k) != ty(first) {
            return Err(format!(
                "`{opcode}` needs operands of one element type, but operand {first} (`{}`) is {} and operand {k} (`{}`) is {} (`convert` changes an element type)",
                name(first),
                ty(first),
                name(k),
                ty(k)
            ));
        }
    }
    let t = ty(first);
    if class_bit(t) & row.takes == 0 {
        return Err(format!(
            "`{opcode}` does not take {t}: it takes {}",
            describe(row.takes)
        ));
    }
    let want = match row.gives {
        Gives::Same | Gives::Select => t.to_string(),
        Gives::Pred => "pred".to_string(),
        Gives::RealPart => crate::hlo::shape::real_part_type(t).to_string(),
        Gives::ComplexOf => match t {
            "f32" => "c64".to_string(),
            "f64" => "c128".to_string(),
            _ => {
                return Err(format!(
                    "`complex` makes c64 of f32 parts or c128 of f64 parts, not of {t}"
                ))
            }
        },
        Gives::Unchecked => return Ok(()),
    };
    if out != want {
        return Err(format!(
            "`{opcode}` of {t} gives {want}, but the output is {}",
            cx.instr.shape
        ));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_each_opcode_once_and_every_one_is_xla_s() {
        for (i, o) in TABLE.iter().enumerate() {
            assert!(
                crate::hlo::parse::XLA_OPCODES.contains(&o.opcode),
                "{}",
                o.opcode
            );
            assert!(
                !TABLE[..i].iter().any(|p| p.opcode == o.opcode),
                "{} twice",
                o.opcode
            );
            assert_ne!(o.takes, 0, "{} takes nothing", o.opcode);
        }
        assert_eq!(OPCODES.len(), TABLE.len());
    }

    #[test]
    fn every_element_type_has_a_class() {
        for (name, _, _) in crate::hlo::shape::ELEMENT_TYPES {
            assert_ne!(class_bit(name), 0, "{name}");
        }
        assert_eq!(class_bit("f33"), 0);
        assert_eq!(describe(NUMBER), "integers, floats and complex numbers");
        assert_eq!(describe(PRED | INT), "pred and integers");
        assert_eq!(describe(FLOAT), "floats");
    }
}
