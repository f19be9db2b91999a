//! Canonical printing in XLA's style: `d0 * 8 + s0`, `-d1 + 16`, `d0 - 5`,
//! `(d1 mod 2) * 4`, `((th_x + bl_x * 128) floordiv 75) mod 40`.
//!
//! Sums print their terms in the order they are built (the linear form fixes it); a term
//! with a negative coefficient after the first prints as subtraction. A compound operand
//! of `*`, `floordiv`, `ceildiv` or `mod` is parenthesised, and so is a negated compound
//! term (`-(d0 floordiv 2)`), so the text means the same under MLIR's parser and ours.
//! Unary minus binds tightest in both (`-d0 mod 3` is `(-d0) mod 3`), and a negative
//! constant is one token (`-7 floordiv s0` is `(-7) floordiv s0`); `min(a, b)` and
//! `max(a, b)` print as calls, as XLA's symbolic expressions do.

use super::{Expr, ExprKind, Op};
use std::fmt;

/// An expression with the names of its variables, ready to print.
pub struct ExprDisplay<'a> {
    pub expr: Expr,
    pub names: &'a [String],
}

/// `format!("{}", display(e, names))` prints `e` with variable `i` named `names[i]`.
pub fn display(expr: Expr, names: &[String]) -> ExprDisplay<'_> {
    ExprDisplay { expr, names }
}

impl fmt::Display for ExprDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        write_sum(&mut s, self.expr, self.names);
        f.write_str(&s)
    }
}

/// The terms of a sum, flattened left to right.
fn terms(e: Expr, out: &mut Vec<Expr>) {
    match e.kind() {
        ExprKind::Bin(Op::Add, a, b) => {
            terms(a, out);
            terms(b, out);
        }
        _ => out.push(e),
    }
}

/// A term as (base, coefficient): `x * 4` is (x, 4), a constant is (None, c).
fn split(term: Expr) -> (Option<Expr>, i64) {
    match term.kind() {
        ExprKind::Const(c) => (None, c),
        ExprKind::Bin(Op::Mul, x, k) => match k.as_const() {
            Some(c) if x.as_const().is_none() => (Some(x), c),
            _ => (Some(term), 1),
        },
        _ => (Some(term), 1),
    }
}

fn var_name(names: &[String], v: u32) -> String {
    names
        .get(v as usize)
        .cloned()
        .unwrap_or_else(|| format!("v{v}"))
}

fn write_sum(s: &mut String, e: Expr, names: &[String]) {
    let mut ts = Vec::new();
    terms(e, &mut ts);
    for (i, &t) in ts.iter().enumerate() {
        let (base, k) = split(t);
        let first = i == 0;
        match base {
            None => {
                if first {
                    s.push_str(&k.to_string());
                } else if k < 0 && k != i64::MIN {
                    s.push_str(&format!(" - {}", -k));
                } else {
                    s.push_str(&format!(" + {k}"));
                }
            }
            Some(b) => {
                if first {
                    match k {
                        1 => write_product(s, b, names),
                        -1 => {
                            s.push('-');
                            write_operand(s, b, names);
                        }
                        _ => {
                            write_operand(s, b, names);
                            s.push_str(&format!(" * {k}"));
                        }
                    }
                } else {
                    let (sign, mag) = if k < 0 && k != i64::MIN {
                        ("-", -k)
                    } else {
                        ("+", k)
                    };
                    s.push_str(&format!(" {sign} "));
                    if mag == 1 {
                        write_product(s, b, names);
                    } else {
                        write_operand(s, b, names);
                        s.push_str(&format!(" * {mag}"));
                    }
                }
            }
        }
    }
}

/// A term at the level of `*`: no parentheses for `a floordiv c`, `a mod c`, `a * b`.
fn write_product(s: &mut String, e: Expr, names: &[String]) {
    match e.kind() {
        ExprKind::Bin(Op::Add, ..) => {
            s.push('(');
            write_sum(s, e, names);
            s.push(')');
        }
        ExprKind::Bin(Op::Mul, x, k) if k.as_const().is_some() && x.as_const().is_none() => {
            write_sum(s, e, names)
        }
        ExprKind::Bin(op, ..) if op.is_min_max() => write_operand(s, e, names),
        ExprKind::Bin(op, a, b) => {
            write_operand(s, a, names);
            s.push_str(&format!(" {} ", op.symbol()));
            write_operand(s, b, names);
        }
        _ => write_operand(s, e, names),
    }
}

/// An operand of `*`, `floordiv`, `ceildiv`, `mod`: atoms bare, anything else in parentheses.
fn write_operand(s: &mut String, e: Expr, names: &[String]) {
    match e.kind() {
        ExprKind::Const(c) => s.push_str(&c.to_string()),
        ExprKind::Var(v) => s.push_str(&var_name(names, v)),
        ExprKind::Bin(op, a, b) if op.is_min_max() => {
            s.push_str(op.symbol());
            s.push('(');
            write_sum(s, a, names);
            s.push_str(", ");
            write_sum(s, b, names);
            s.push(')');
        }
        ExprKind::Bin(..) => {
            s.push('(');
            write_sum(s, e, names);
            s.push(')');
        }
    }
}
