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
    if (a.wrapping_rem(b) != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// `a floordiv b`, rounding toward -∞; `None` on overflow (`-2^63 floordiv -1`, whose
/// quotient 2^63 [`floor_div`] wraps to -2^63).
pub fn floor_div_checked(a: i64, b: i64) -> Option<i64> {
    a.checked_div(b)?;
    Some(floor_div(a, b))
}

/// `a ceildiv b`, rounding toward +∞; `None` on overflow.
pub fn ceil_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    if (a.wrapping_rem(b) != 0) && ((a < 0) == (b < 0)) {
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

/// `op` on exact (128-bit) intermediate values, checked: SPEC §2's "intermediate
/// arithmetic is exact", so `d0 + 9223372036854775807 + 1` has a value at `d0 = -1` and
/// `-9223372036854775808 * -1 + d0` one at `d0 = -5`; only a final value past 64 bits is an
/// overflow.
pub fn apply_wide(op: Op, a: i128, b: i128) -> Result<i128, EvalError> {
    // 64-bit operands (the common case): 64-bit division, several times cheaper than
    // 128-bit; only -2^63 by -1 needs the wide path
    if op.is_div_like() {
        if let (Ok(x), Ok(y)) = (i64::try_from(a), i64::try_from(b)) {
            if y != 0 && !(x == i64::MIN && y == -1) {
                return Ok(match op {
                    Op::FloorDiv => floor_div(x, y),
                    Op::CeilDiv => ceil_div(x, y).ok_or(EvalError::Overflow("ceildiv"))?,
                    _ => modulo(x, y),
                }
                .into());
            }
        }
    }
    let over = || EvalError::Overflow(op.symbol());
    match op {
        Op::Add => a.checked_add(b).ok_or_else(over),
        Op::Min => Ok(a.min(b)),
        Op::Max => Ok(a.max(b)),
        Op::Mul => a.checked_mul(b).ok_or_else(over),
        Op::FloorDiv | Op::CeilDiv | Op::Mod if b == 0 => Err(EvalError::DivisionByZero),
        Op::FloorDiv => {
            let q = a.checked_div(b).ok_or_else(over)?;
            let inexact = a.wrapping_rem(b) != 0;
            Ok(if inexact && ((a < 0) != (b < 0)) {
                q - 1
            } else {
                q
            })
        }
        Op::CeilDiv => {
            let q = a.checked_div(b).ok_or_else(over)?;
            let inexact = a.wrapping_rem(b) != 0;
            Ok(if inexact && ((a < 0) == (b < 0)) {
                q + 1
            } else {
                q
            })
        }
        Op::Mod => {
            let r = a.wrapping_rem(b);
            Ok(if r != 0 && ((r < 0) != (b < 0)) {
                r + b
            } else {
                r
            })
        }
    }
}

/// A final value back to 64 bits; past them, an overflow in the expression's operator.
pub fn narrow(e: Expr, v: i128) -> Result<i64, EvalError> {
    i64::try_from(v).map_err(|_| {
        EvalError::Overflow(match e.kind() {
            ExprKind::Bin(op, ..) => op.symbol(),
            _ => "a constant",
        })
    })
}

/// The value of `e` when variable `i` is `point[i]` (intermediate values exact).
pub fn eval(e: Expr, point: &[i64]) -> Result<i64, EvalError> {
    narrow(e, eval_wide(e, point)?)
}

/// Node visits and depth the memo-less fast path of [`eval_wide`] may spend before it hands
/// over to the memoized walk (which a deep or heavily shared expression needs).
const FAST_VISITS: u32 = 4096;
const FAST_DEPTH: u32 = 128;

/// [`eval_wide`] by plain recursion, for the common small expression: `None` when it would
/// pass [`FAST_VISITS`] visits or [`FAST_DEPTH`] levels.
fn eval_fast(
    e: Expr,
    point: &[i64],
    visits: &mut u32,
    depth: u32,
) -> Option<Result<i128, EvalError>> {
    *visits += 1;
    if *visits > FAST_VISITS || depth > FAST_DEPTH {
        return None;
    }
    Some(match e.kind() {
        ExprKind::Bin(op, a, b) => {
            let x = match eval_fast(a, point, visits, depth + 1)? {
                Ok(x) => x,
                Err(err) => return Some(Err(err)),
            };
            let y = match eval_fast(b, point, visits, depth + 1)? {
                Ok(y) => y,
                Err(err) => return Some(Err(err)),
            };
            apply_wide(op, x, y)
        }
        _ => leaf(e, point),
    })
}

/// The exact value of `e` at `point`; shared subterms are evaluated once each.
pub fn eval_wide(e: Expr, point: &[i64]) -> Result<i128, EvalError> {
    if !matches!(e.kind(), ExprKind::Bin(..)) {
        return leaf(e, point);
    }
    let mut visits = 0;
    if let Some(v) = eval_fast(e, point, &mut visits, 0) {
        return v;
    }
    // post-order with an explicit stack: no recursion on the depth of the expression
    let mut memo: std::collections::HashMap<Expr, i128> = Default::default();
    let mut stack = vec![(e, false)];
    while let Some((x, ready)) = stack.pop() {
        if memo.contains_key(&x) {
            continue;
        }
        let v = match x.kind() {
            ExprKind::Bin(op, a, b) => {
                if !ready {
                    stack.push((x, true));
                    stack.push((b, false));
                    stack.push((a, false));
                    continue;
                }
                apply_wide(op, memo[&a], memo[&b])?
            }
            _ => leaf(x, point)?,
        };
        memo.insert(x, v);
    }
    Ok(memo[&e])
}

fn leaf(e: Expr, point: &[i64]) -> Result<i128, EvalError> {
    match e.kind() {
        ExprKind::Const(c) => Ok(c.into()),
        ExprKind::Var(v) => point
            .get(v as usize)
            .map(|&x| x.into())
            .ok_or(EvalError::MissingVar(v)),
        ExprKind::Bin(..) => unreachable!("a leaf"),
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
        assert_eq!(floor_div_checked(-7, 2), Some(-4));
        assert_eq!(floor_div_checked(i64::MIN, -1), None);
        assert_eq!(floor_div_checked(i64::MIN + 1, -1), Some(i64::MAX));
        assert_eq!(modulo(-7, 3), 2);
        assert_eq!(modulo(7, 3), 1);
        assert_eq!(apply(Op::Mod, 5, 0), Err(EvalError::DivisionByZero));
        assert_eq!(apply(Op::Add, i64::MAX, 1), Err(EvalError::Overflow("+")));
    }

    #[test]
    fn intermediate_values_are_exact() {
        let d0 = Expr::var(0);
        let max = Expr::constant(i64::MAX);
        // (d0 + 2^63 - 1) + 1 at d0 = -1, and 2^63 + d0 (as -(-2^63) + d0) at d0 = -5
        let e = Expr::bin(Op::Add, Expr::bin(Op::Add, d0, max), Expr::constant(1));
        assert_eq!(eval(e, &[-1]), Ok(i64::MAX));
        let two63 = Expr::bin(Op::Mul, Expr::constant(i64::MIN), Expr::constant(-1));
        assert_eq!(eval(Expr::bin(Op::Add, two63, d0), &[-5]), Ok(i64::MAX - 4));
        assert_eq!(eval(two63, &[0]), Err(EvalError::Overflow("*")));
        // i64::MIN mod -1 = 0; i64::MIN floordiv -1 = 2^63: an overflow, not a panic
        let min = Expr::constant(i64::MIN);
        assert_eq!(
            eval(Expr::bin(Op::Mod, min, Expr::constant(-1)), &[]),
            Ok(0)
        );
        let q = Expr::bin(Op::FloorDiv, min, Expr::constant(-1));
        assert_eq!(eval(q, &[]), Err(EvalError::Overflow("floordiv")));
        assert_eq!(floor_div(i64::MIN, -1), i64::MIN); // wraps: callers exclude it
        assert_eq!(ceil_div(i64::MIN, -1), None);
    }
}
