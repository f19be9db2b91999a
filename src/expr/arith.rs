//! Evaluation of an expression at a point, with checked 64-bit arithmetic.

use super::{Expr, ExprKind, Op};

/// Why an expression has no value at a point.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error("division by zero")]
    DivisionByZero,
    #[error("integer overflow in {0}")]
    Overflow(&'static str),
    #[error("variable {0} has no value")]
    MissingVar(u32),
}

/// `a floordiv b`, rounding toward -∞ (b != 0; overflow only for i64::MIN / -1).
pub fn floor_div(a: i64, b: i64) -> i64 {
    let q = a.wrapping_div(b);
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// `a ceildiv b`, rounding toward +∞; `None` on overflow.
pub fn ceil_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    if (a % b != 0) && ((a < 0) == (b < 0)) {
        q.checked_add(1)
    } else {
        Some(q)
    }
}

/// `a mod b` = `a - (a floordiv b) * b`: in `[0, b)` for `b > 0`.
pub fn modulo(a: i64, b: i64) -> i64 {
    let r = a.wrapping_rem(b);
    if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    }
}

/// Applies `op` to two values, checking overflow and division by zero.
pub fn apply(op: Op, a: i64, b: i64) -> Result<i64, EvalError> {
    match op {
        Op::Add => a.checked_add(b).ok_or(EvalError::Overflow("+")),
        Op::Min => Ok(a.min(b)),
        Op::Max => Ok(a.max(b)),
        Op::Mul => a.checked_mul(b).ok_or(EvalError::Overflow("*")),
        Op::FloorDiv | Op::CeilDiv | Op::Mod if b == 0 => Err(EvalError::DivisionByZero),
        Op::FloorDiv => {
            if a == i64::MIN && b == -1 {
                Err(EvalError::Overflow("floordiv"))
            } else {
                Ok(floor_div(a, b))
            }
        }
        Op::CeilDiv => ceil_div(a, b).ok_or(EvalError::Overflow("ceildiv")),
        Op::Mod => {
            if b == -1 {
                Ok(0)
            } else {
                Ok(modulo(a, b))
            }
        }
    }
}

/// The value of `e` when variable `i` is `point[i]`.
pub fn eval(e: Expr, point: &[i64]) -> Result<i64, EvalError> {
    match e.kind() {
        ExprKind::Const(c) => Ok(c),
        ExprKind::Var(v) => point
            .get(v as usize)
            .copied()
            .ok_or(EvalError::MissingVar(v)),
        ExprKind::Bin(op, a, b) => apply(op, eval(a, point)?, eval(b, point)?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn division_rounds_like_mlir() {
        assert_eq!(floor_div(-7, 2), -4);
        assert_eq!(floor_div(7, 2), 3);
        assert_eq!(floor_div(-8, 2), -4);
        assert_eq!(ceil_div(-7, 2), Some(-3));
        assert_eq!(ceil_div(7, 2), Some(4));
        assert_eq!(modulo(-7, 3), 2);
        assert_eq!(modulo(7, 3), 1);
        assert_eq!(apply(Op::Mod, 5, 0), Err(EvalError::DivisionByZero));
        assert_eq!(apply(Op::Add, i64::MAX, 1), Err(EvalError::Overflow("+")));
    }
}
