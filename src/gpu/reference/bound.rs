//! How far a correct kernel's value may be from the reference's: a radius carried through
//! the reference's evaluation of one element, operation by operation.
//!
//! The reference computes one realisation of the HLO: each operation rounded to its type in
//! its own order. A kernel computes another, just as correct: it sums in another order, may
//! fuse a multiply and an add, calls the device's `expf` (within 2 ulps, where libm's is
//! within 1), and where a value is near a rounding boundary of a 16-bit type the two can
//! round it apart by one unit; the next operation then scales that unit. A fixed relative
//! tolerance cannot follow that (the real RMS norm of `bf16[13,5000]` ends 2 units in the
//! last place apart), so a mismatch the tolerance rejects is checked against a bound made
//! from the computation itself: a [`Ball`] per node, the reference's value and a radius `r`
//! such that every correct kernel's value of that node lies in `[v - r, v + r]`.
//!
//! For an operation `op` over balls `(x_i, r_i)`, computed in the type `T` of unit roundoff
//! `u` by both sides, with `ε` the relative error its library function may add (0 for
//! `+ - * /` and `sqrt`, which IEEE rounds correctly; a few ulps of the type it is computed
//! in for the transcendental functions; 16-bit types add `f32`'s `u`, as they are computed
//! in `f32` and rounded again):
//!
//! - `Δ`, how far the exact `op` moves over the balls: `r_a + r_b` for `+ -`,
//!   `|a| r_b + |b| r_a + r_a r_b` for `*`, `(|a| r_b + |b| r_a) / (|b| (|b| - r_b))` for
//!   `/`, the largest radius for `max` and `min`, the function's largest slope over the
//!   ball for the unary functions (`e^a (e^r - 1)` for `exp`, `-ln(1 - r/a)` for `log`,
//!   `sqrt(a) - sqrt(a - r)`, the Lipschitz constants 1 of `tanh`, `sin` and `cos`...);
//! - then each side's rounding, `a (|op(kernel's operands)| + |op(reference's)|)` with
//!   `a = u + ε`: `r = Δ (1 + a) + 2 a |v| / (1 - a)`, plus twice the smallest subnormal
//!   step of `T` (an underflow errs absolutely).
//!
//! A sum of `n` terms in any order is within `((1 + u)^(n-1) - 1) Σ(|x_i| + r_i)` of the
//! exact sum of its terms (Higham, *Accuracy and Stability of Numerical Algorithms*, §4.2),
//! the reference's own order within `u Σ|ŝ_j|` of it (its partial sums `ŝ_j`), and the
//! terms move by `Σ r_i`. A `pred` is certain (radius 0) or not (1): a comparison whose
//! operands' balls straddle its boundary; a `select` on an uncertain predicate takes the
//! union of both sides. Whatever cannot be bounded this way (an uncertain value used as an
//! index, in a bit operation, a variadic reduction of uncertain terms) has an infinite
//! radius, and the verdict stays the tolerance's.
//!
//! Every bound is an over-estimate of what any order of evaluation and any correctly
//! rounded (or ε-accurate) library can give: it can only accept a kernel the tolerance
//! rejected when the difference is explained by rounding. An indexing error moves values by
//! whole elements, far beyond these radii unless the radius itself is unbounded.

use super::{binary, compare, convert, unary, Reference, Scalar};
use crate::gpu::spec::{BinOp, Body, CmpDir, ElemType, UnOp};
use crate::MapError;
use std::collections::HashMap;

/// The reference's value of a node, and how far a correct kernel's value may be from it
/// (`f64::INFINITY`: not bounded). For `pred` the radius is 0 (certain) or 1 (either).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Ball {
    pub v: Scalar,
    pub r: f64,
    /// Why two correct kernels may disagree on this value without bound, where they may
    /// (then no check against one reference can tell a wrong kernel from a right one).
    pub vague: Option<Vague>,
}

/// What makes a value undetermined by the HLO it comes from.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Vague {
    /// A float sum whose order alone may move it by as much as the sum of its terms'
    /// magnitudes (`(1 + u)^(n-1) - 1 >= 1`: 16-bit accumulation of hundreds of terms): its
    /// number of terms and accumulation type.
    Order { n: f64, t: ElemType },
    /// A reduction whose initial value is not an identity of its reducer, which XLA's
    /// semantics leave undefined: a kernel that starts each of its partial results from
    /// the initial value (as XLA's GPU kernels do) applies it once per partial result,
    /// the reference once in all. Reducers that give the same result however often the
    /// value is applied (`maximum`, `minimum`, `and`, `or`) never make one.
    Init { op: BinOp, init: f64, t: ElemType },
}

/// Whether `init` is an identity of `op` on type `t`, or applying it more than once
/// changes nothing (an idempotent reducer: `max(max(i, a), max(i, b)) = max(i, a, b)`; a
/// product from 0).
pub fn init_is_harmless(op: BinOp, init: f64, t: ElemType) -> bool {
    match op {
        BinOp::Max | BinOp::Min | BinOp::And | BinOp::Or => true,
        // on pred, multiply is `and`
        BinOp::Mul if t == ElemType::Pred => true,
        // 1 the identity; 0 absorbs every product, however often it is applied
        BinOp::Mul => init == 1.0 || init == 0.0,
        // 0 and -0 (the float sum's exact identity) alike; on pred, add is `xor`
        BinOp::Add | BinOp::Xor => init == 0.0,
        // not associative: the order of any kernel is its own, whatever the initial value
        _ => true,
    }
}

impl Ball {
    fn exact(v: Scalar) -> Ball {
        Ball {
            v,
            r: 0.0,
            vague: None,
        }
    }
    fn unbounded(v: Scalar) -> Ball {
        Ball {
            v,
            r: f64::INFINITY,
            vague: None,
        }
    }
    fn new(v: Scalar, r: f64, operands: &[Ball]) -> Ball {
        Ball {
            v,
            r: if r.is_nan() { f64::INFINITY } else { r },
            vague: operands.iter().find_map(|b| b.vague),
        }
    }
    /// Whether `got` (as `f64`) lies in the ball of a value of type `elem`.
    pub fn holds(&self, elem: ElemType, got: f64) -> bool {
        let v = self.v.to_f64(elem);
        if v.is_nan() || got.is_nan() {
            return v.is_nan() && got.is_nan();
        }
        got == v || (self.r.is_finite() && (got - v).abs() <= self.r)
    }
}

/// The computed balls of functions (by index) and of reductions read by some of the
/// function's dimensions (by the reduction's map and those coordinates), as the plain
/// evaluation memoizes values.
#[derive(Default)]
pub struct Balls {
    funcs: HashMap<(usize, Vec<i64>), Ball>,
    reductions: HashMap<(usize, Vec<i64>), Ball>,
    /// Balls computed as if every float sum ran in the reference's order (no order slack),
    /// to tell whether an unbounded value is unbounded because of the sums' orders alone.
    fixed_order: bool,
    /// The tables of the other mode, while this one's are in use.
    other: (
        HashMap<(usize, Vec<i64>), Ball>,
        HashMap<(usize, Vec<i64>), Ball>,
    ),
}

impl Balls {
    /// Switches between the balls with and without the sums' order slack.
    fn switch(&mut self) {
        std::mem::swap(&mut self.funcs, &mut self.other.0);
        std::mem::swap(&mut self.reductions, &mut self.other.1);
        self.fixed_order = !self.fixed_order;
    }
}

/// Entries kept before the tables are dropped and refilled (a bound is computed only for
/// the elements the tolerance rejects: a few rows of a norm, not a whole tensor).
const BALLS_LIMIT: usize = 1 << 22;

/// The unit roundoff of the type a float operation of type `t` rounds to, with `f32`'s
/// added for the 16-bit types, computed in `f32` and rounded again (a double rounding).
fn roundoff(t: ElemType) -> f64 {
    let u = crate::gpu::bench::unit_roundoff(t);
    match t {
        ElemType::F16 | ElemType::BF16 => u + 2f64.powi(-24),
        _ => u,
    }
}

/// How far the order alone may move a sum of `n` terms accumulated in `t`, relative to its
/// terms' magnitudes (the factor the bounds use; `vague` where it reaches 1).
pub fn order_factor(n: f64, t: ElemType) -> f64 {
    crate::gpu::bench::any_order_factor(n, roundoff(t))
}

/// One unit in the last place, relative, of the type float operations of type `t` are
/// computed in (f64 for f64, f32 for the others).
fn ulp_of_compute(t: ElemType) -> f64 {
    if t == ElemType::F64 {
        2f64.powi(-52)
    } else {
        2f64.powi(-23)
    }
}

/// The smallest positive (subnormal) value of a float type: the absolute error an
/// underflowing rounding may add is half of it.
fn tiny(t: ElemType) -> f64 {
    match t {
        ElemType::F16 => 2f64.powi(-24),
        ElemType::F64 => f64::from_bits(1),
        _ => 2f64.powi(-149),
    }
}

/// The largest finite value of a float type.
fn max_finite(t: ElemType) -> f64 {
    match t {
        ElemType::F16 => 65504.0,
        ElemType::BF16 => f32::MAX as f64 * (1.0 - 2f64.powi(-8)) / (1.0 - 2f64.powi(-24)),
        ElemType::F32 => f32::MAX as f64,
        _ => f64::MAX,
    }
}

/// How many ulps (of the type it is computed in) the kernel's and the reference's library
/// functions may differ from the exact function, together: CUDA's documented maximum
/// errors (`expf` 2, `logf` 1, `tanhf` 2, `sinf`/`cosf` 2, `tanf` 4, `erff` 2, `powf` 4,
/// `atan2f` 3, `cbrtf` 1, `expm1f` 1, `log1pf` 1), one more for libm's (or the reference's
/// own `erf`), and the extra roundings of the compositions ixmap emits (`1 / sqrt`,
/// `1 / (1 + exp(-x))`). `+ - * /` and `sqrt` round correctly on both sides: 0.
fn library_ulps(op: Option<UnOp>, bin: Option<BinOp>) -> f64 {
    match (op, bin) {
        (Some(UnOp::Exp), _) => 3.0,
        (Some(UnOp::Log), _) => 2.0,
        (Some(UnOp::Tanh), _) => 3.0,
        (Some(UnOp::Rsqrt), _) => 2.0,
        (Some(UnOp::Cbrt), _) => 2.0,
        (Some(UnOp::Expm1 | UnOp::Log1p), _) => 2.0,
        (Some(UnOp::Logistic), _) => 6.0,
        (Some(UnOp::Sin | UnOp::Cos), _) => 3.0,
        (Some(UnOp::Tan), _) => 5.0,
        (Some(UnOp::Erf), _) => 3.0,
        (_, Some(BinOp::Pow)) => 5.0,
        (_, Some(BinOp::Atan2)) => 4.0,
        _ => 0.0,
    }
}

/// The radius of a float result `v` of type `t` whose exact operation moved by `delta`
/// over its operands' balls, with `ulps` of library error on each side (see the module's
/// comment): both sides' roundings added.
fn rounded(t: ElemType, v: f64, delta: f64, ulps: f64) -> f64 {
    if !delta.is_finite() || delta.is_nan() {
        return f64::INFINITY;
    }
    if !t.is_float() {
        return delta;
    }
    if !v.is_finite() {
        // An overflow or a NaN: bounded only when nothing moved.
        return if delta == 0.0 { 0.0 } else { f64::INFINITY };
    }
    let a = (roundoff(t) + ulps * ulp_of_compute(t)) * (1.0 + 1e-6);
    delta * (1.0 + a) + 2.0 * a * v.abs() / (1.0 - a) + 2.0 * tiny(t)
}

/// The largest change of the exact unary `op` over `[a - r, a + r]`, `INFINITY` where it is
/// not bounded (a pole or a discontinuity inside).
fn unary_delta(op: UnOp, a: f64, r: f64) -> f64 {
    if r == 0.0 {
        return 0.0;
    }
    if !a.is_finite() {
        return f64::INFINITY;
    }
    let near = (a.abs() - r).max(0.0); // the smallest |x| in the ball
    let d = match op {
        UnOp::Neg | UnOp::Abs => r,
        UnOp::Exp | UnOp::Expm1 => a.exp() * r.exp_m1(),
        UnOp::Log if r < a => -(-r / a).ln_1p(),
        UnOp::Log1p if r < 1.0 + a => -(-r / (1.0 + a)).ln_1p(),
        UnOp::Sqrt if r <= a => a.sqrt() - (a - r).sqrt(),
        UnOp::Rsqrt if r < a => 1.0 / (a - r).sqrt() - 1.0 / a.sqrt(),
        UnOp::Cbrt => {
            // Hölder: |cbrt x - cbrt y| <= 2^(2/3) |x - y|^(1/3); away from 0 the slope.
            let holder = 2f64.powf(2.0 / 3.0) * r.cbrt();
            if near > 0.0 {
                holder.min(r / (3.0 * near.powf(2.0 / 3.0)))
            } else {
                holder
            }
        }
        // Slopes: sech^2 and σ(1 - σ), largest nearest 0.
        UnOp::Tanh => r * (1.0 - near.tanh().powi(2)),
        UnOp::Logistic => {
            let s = 1.0 / (1.0 + (-near).exp());
            r * (s * (1.0 - s)).min(0.25)
        }
        UnOp::Sin | UnOp::Cos => r.min(2.0),
        UnOp::Erf => std::f64::consts::FRAC_2_SQRT_PI * (-near * near).exp() * r,
        UnOp::Sign if near > 0.0 => 0.0,
        UnOp::Sign => 2.0,
        // A jump of at most 1 where the ball holds an integer.
        UnOp::Floor | UnOp::Ceil | UnOp::RoundAfz | UnOp::RoundEven => r + 1.0,
        _ => f64::INFINITY,
    };
    // `0 * inf` (an exponential's underflow times a huge radius): not bounded.
    if d.is_nan() {
        f64::INFINITY
    } else {
        d
    }
}

/// The largest change of the exact float `op` over the balls `(a, ra)` and `(b, rb)`.
fn binary_delta(op: BinOp, a: f64, ra: f64, b: f64, rb: f64) -> f64 {
    if ra == 0.0 && rb == 0.0 {
        return 0.0;
    }
    if !a.is_finite() || !b.is_finite() {
        return f64::INFINITY;
    }
    let d = match op {
        BinOp::Add | BinOp::Sub => ra + rb,
        BinOp::Mul => a.abs() * rb + b.abs() * ra + ra * rb,
        BinOp::Div if b.abs() > rb => (a.abs() * rb + b.abs() * ra) / (b.abs() * (b.abs() - rb)),
        BinOp::Max | BinOp::Min => ra.max(rb),
        BinOp::Pow if a > ra => {
            // a^b = exp(b ln a): the log's ball, the product's, then the exponential's.
            let la = a.ln();
            let rl = unary_delta(UnOp::Log, a, ra);
            let rp = binary_delta(BinOp::Mul, b, rb, la, rl);
            unary_delta(UnOp::Exp, b * la, rp)
        }
        _ => f64::INFINITY,
    };
    if d.is_nan() {
        f64::INFINITY
    } else {
        d
    }
}

/// Whether `dir` gives the same answer for every pair of `[a - ra, a + ra]` and
/// `[b - rb, b + rb]`.
fn compare_certain(dir: CmpDir, a: f64, ra: f64, b: f64, rb: f64) -> bool {
    if ra == 0.0 && rb == 0.0 {
        return true;
    }
    if !(a.is_finite() && b.is_finite() && ra.is_finite() && rb.is_finite()) {
        return false;
    }
    let (alo, ahi, blo, bhi) = (a - ra, a + ra, b - rb, b + rb);
    let apart = ahi < blo || bhi < alo;
    let f = |x: f64, y: f64| match dir {
        CmpDir::Lt => x < y,
        CmpDir::Le => x <= y,
        CmpDir::Gt => x > y,
        CmpDir::Ge => x >= y,
        CmpDir::Eq | CmpDir::Ne => apart,
    };
    match dir {
        CmpDir::Eq | CmpDir::Ne => apart,
        // Monotone: the two extreme pairs decide.
        _ => f(ahi, blo) == f(alo, bhi),
    }
}

/// An integer result `v` of type `t`, its exact operation moved by `delta`: bounded while
/// `v ± delta` stays in the type (no wrap), else unbounded.
fn int_radius(t: ElemType, v: Scalar, delta: f64) -> f64 {
    if delta == 0.0 {
        return 0.0;
    }
    if !delta.is_finite() {
        return f64::INFINITY;
    }
    let x = v.to_f64(t);
    let (lo, hi) = super::int_range(t);
    if x - delta >= lo as f64 && x + delta <= hi as f64 {
        delta
    } else {
        f64::INFINITY
    }
}

impl Reference<'_> {
    /// The ball of function `func` at logical index `idx`: the reference's value, and how
    /// far a correct kernel's may be from it (see the module's comment).
    pub fn ball(&self, func: usize, idx: &[i64]) -> Result<Ball, MapError> {
        let key = (func, idx.to_vec());
        if let Some(&b) = self.balls.borrow().funcs.get(&key) {
            return Ok(b);
        }
        let f = self
            .spec
            .functions
            .get(func)
            .ok_or_else(|| MapError::Other(format!("no function {func}")))?;
        let b = self.ball_of(&f.body, idx)?;
        let mut t = self.balls.borrow_mut();
        if t.funcs.len() >= BALLS_LIMIT {
            t.funcs.clear();
        }
        t.funcs.insert(key, b);
        Ok(b)
    }

    fn ball_of(&self, b: &Body, idx: &[i64]) -> Result<Ball, MapError> {
        let ty = self.ty(b);
        Ok(match b {
            Body::Const(_) | Body::Load { .. } | Body::Index { .. } => {
                Ball::exact(self.body(b, idx)?)
            }
            Body::Call { func, map } => self.ball(*func, &self.at(map, idx)?)?,
            Body::Guard {
                map,
                then,
                otherwise,
            } => {
                if self.point(map, idx)?.is_some() {
                    self.ball_of(then, idx)?
                } else {
                    self.ball_of(otherwise, idx)?
                }
            }
            Body::DynCall {
                func,
                map,
                starts,
                limits,
            } => {
                for s in starts {
                    let sb = self.ball_of(s, idx)?;
                    if sb.r != 0.0 {
                        return Ok(Ball::new(self.body(b, idx)?, f64::INFINITY, &[sb]));
                    }
                }
                self.ball(*func, &self.dyn_at(map, starts, limits, idx)?)?
            }
            Body::Unary(op, a) => {
                let x = self.ball_of(a, idx)?;
                let at = self.ty(a);
                let v = unary(*op, at, x.v)?;
                let exact_op = matches!(
                    op,
                    UnOp::Neg
                        | UnOp::Abs
                        | UnOp::Sign
                        | UnOp::Floor
                        | UnOp::Ceil
                        | UnOp::RoundAfz
                        | UnOp::RoundEven
                        | UnOp::BitcastConvert(_)
                        | UnOp::Not
                        | UnOp::Popcnt
                        | UnOp::Clz
                );
                let r = match op {
                    // The same operation on the same value gives the same bits.
                    _ if exact_op && x.r == 0.0 => 0.0,
                    UnOp::BitcastConvert(_) => f64::INFINITY,
                    UnOp::IsFinite => {
                        let xv = x.v.to_f64(at);
                        let sure = x.r == 0.0
                            || (xv.is_finite()
                                && x.r.is_finite()
                                && xv.abs() + x.r < max_finite(at));
                        if sure {
                            0.0
                        } else {
                            1.0
                        }
                    }
                    UnOp::Not if at == ElemType::Pred => x.r,
                    _ if at.is_float() => rounded(
                        at,
                        v.to_f64(at),
                        unary_delta(*op, x.v.to_f64(at), x.r),
                        library_ulps(Some(*op), None),
                    ),
                    // Integer and bit operations: exact on exact operands only.
                    UnOp::Neg | UnOp::Abs => int_radius(at, v, x.r),
                    _ if x.r == 0.0 => 0.0,
                    _ => f64::INFINITY,
                };
                Ball::new(v, r, &[x])
            }
            Body::Binary(op, a, c) => {
                let (x, y) = (self.ball_of(a, idx)?, self.ball_of(c, idx)?);
                let v = binary(*op, ty, x.v, y.v)?;
                let r = if ty.is_float() {
                    rounded(
                        ty,
                        v.to_f64(ty),
                        binary_delta(*op, x.v.to_f64(ty), x.r, y.v.to_f64(ty), y.r),
                        library_ulps(None, Some(*op)),
                    )
                } else if ty == ElemType::Pred {
                    pred_binary(*op, x, y)
                } else if x.r == 0.0 && y.r == 0.0 {
                    0.0
                } else {
                    match op {
                        BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Max | BinOp::Min => {
                            let d = binary_delta(*op, x.v.to_f64(ty), x.r, y.v.to_f64(ty), y.r);
                            int_radius(ty, v, d)
                        }
                        _ => f64::INFINITY,
                    }
                };
                Ball::new(v, r, &[x, y])
            }
            Body::Convert(to, a) => {
                let x = self.ball_of(a, idx)?;
                let from = self.ty(a);
                let v = convert(from, *to, x.v);
                let xv = x.v.to_f64(from);
                let r = if x.r == 0.0 {
                    0.0
                } else if *to == ElemType::Pred {
                    // `x != 0`: certain while the ball keeps off 0.
                    if xv.abs() > x.r {
                        0.0
                    } else {
                        1.0
                    }
                } else if to.is_float() {
                    // A wider float holds every value exactly; a narrower one rounds.
                    let narrower = !from.is_float()
                        || crate::gpu::bench::unit_roundoff(*to)
                            > crate::gpu::bench::unit_roundoff(from);
                    if narrower {
                        rounded(*to, v.to_f64(*to), x.r, 0.0)
                    } else {
                        x.r
                    }
                } else if from.is_float() {
                    // Toward zero: a jump of at most 1 where the ball holds an integer.
                    if xv.is_nan() {
                        f64::INFINITY
                    } else {
                        int_radius(*to, v, x.r + 1.0)
                    }
                } else {
                    int_radius(*to, v, x.r)
                };
                Ball::new(v, r, &[x])
            }
            Body::Compare(dir, a, c) => {
                let t = self.spec.compared_elem(a, c);
                let (x, y) = (self.ball_of(a, idx)?, self.ball_of(c, idx)?);
                let v = Scalar::I(compare(*dir, t, x.v, y.v) as i64);
                let sure = compare_certain(*dir, x.v.to_f64(t), x.r, y.v.to_f64(t), y.r);
                Ball::new(v, if sure { 0.0 } else { 1.0 }, &[x, y])
            }
            Body::Select(c, a, e) => {
                let p = self.ball_of(c, idx)?;
                let (x, y) = (self.ball_of(a, idx)?, self.ball_of(e, idx)?);
                let (taken, other) = if p.v.is_true() { (x, y) } else { (y, x) };
                if p.r == 0.0 {
                    taken
                } else {
                    let d = (other.v.to_f64(ty) - taken.v.to_f64(ty)).abs();
                    Ball::new(taken.v, taken.r.max(d + other.r), &[p, taken, other])
                }
            }
            Body::Reduce {
                op,
                init,
                func,
                map,
            } => {
                let key = map as *const crate::map::IndexingMap as usize;
                let memo_key = self
                    .reduce_memo
                    .get(&key)
                    .map(|(used, _)| (key, used.iter().map(|&i| idx[i]).collect::<Vec<_>>()));
                if let Some(k) = &memo_key {
                    if let Some(&b) = self.balls.borrow().reductions.get(k) {
                        return Ok(b);
                    }
                }
                let ball = self.reduce_ball(*op, *init, *func, map, ty, idx)?;
                if let Some(k) = memo_key {
                    let mut t = self.balls.borrow_mut();
                    if t.reductions.len() >= BALLS_LIMIT {
                        t.reductions.clear();
                    }
                    t.reductions.insert(k, ball);
                }
                ball
            }
            Body::ReduceTuple {
                inits, funcs, map, ..
            } => {
                // Bounded only when every operand is exact: the reducer may compare them.
                let mut exact = true;
                for i in inits {
                    exact &= self.ball_of(i, idx)?.r == 0.0;
                }
                if exact {
                    self.each_point(map, idx, &mut |at| {
                        for &f in funcs {
                            exact &= self.ball(f, at)?.r == 0.0;
                        }
                        Ok(())
                    })?;
                }
                let v = self.body(b, idx)?;
                if exact {
                    Ball::exact(v)
                } else {
                    Ball::unbounded(v)
                }
            }
            Body::Param(..) | Body::Opaque { .. } => Ball::unbounded(self.body(b, idx)?),
        })
    }

    /// The ball of `reduce(op, init)` of `func` over `map`'s range at `idx`, the value
    /// folded in the reference's order (as [`Reference::body`] folds it).
    fn reduce_ball(
        &self,
        op: BinOp,
        init: f64,
        func: usize,
        map: &crate::map::IndexingMap,
        ty: ElemType,
        idx: &[i64],
    ) -> Result<Ball, MapError> {
        let mut acc = Scalar::from_f64(ty, init);
        // Terms (the initial value one of them), Σ(|x_i| + r_i), Σ r_i, the largest r_i,
        // Σ|ŝ_j|, Π(|x_i| + r_i), and the product's ball folded as the reference folds.
        let mut n = 1.0f64;
        let mut mag = acc.to_f64(ty).abs();
        let (mut sum_r, mut max_r, mut partial) = (0.0f64, 0.0f64, 0.0f64);
        let mut prod_mag = mag;
        let mut prod_r = 0.0f64;
        // A value applied once per partial result in a kernel, once in the reference.
        let mut vague =
            (!init_is_harmless(op, init, ty)).then_some(Vague::Init { op, init, t: ty });
        self.each_point(map, idx, &mut |at| {
            let t = self.ball(func, at)?;
            vague = vague.or(t.vague);
            let before = acc.to_f64(ty);
            let tv = t.v.to_f64(ty);
            acc = binary(op, ty, acc, t.v)?;
            n += 1.0;
            mag += tv.abs() + t.r;
            sum_r += t.r;
            max_r = max_r.max(t.r);
            partial += acc.to_f64(ty).abs();
            if op == BinOp::Mul {
                prod_r = binary_delta(BinOp::Mul, before, prod_r, tv, t.r);
                prod_mag *= tv.abs() + t.r;
            }
            Ok(())
        })?;
        let r = match op {
            BinOp::Max | BinOp::Min => max_r,
            _ if !ty.is_float() => {
                if max_r == 0.0 {
                    0.0
                } else if ty == ElemType::Pred {
                    1.0
                } else {
                    f64::INFINITY
                }
            }
            BinOp::Add | BinOp::Mul => {
                let u = roundoff(ty);
                let factor = if self.balls.borrow().fixed_order {
                    0.0
                } else {
                    order_factor(n, ty)
                };
                if factor >= 1.0 {
                    vague = vague.or(Some(Vague::Order { n, t: ty }));
                }
                if op == BinOp::Add {
                    sum_r + factor * mag + u * partial + n * 2.0 * tiny(ty)
                } else {
                    prod_r + 2.0 * factor * prod_mag + n * 2.0 * tiny(ty)
                }
            }
            _ if sum_r == 0.0 => 0.0,
            _ => f64::INFINITY,
        };
        let mut b = Ball::new(acc, r, &[]);
        b.vague = vague;
        Ok(b)
    }

    /// Whether element `i` of output `k` is unbounded only because its float sums may run
    /// in any order: its ball is unbounded, and bounded when every sum runs in the
    /// reference's order (what follows a sum magnifies the orders' difference without
    /// limit: an `rsqrt` of a variance that another order may bring to 0).
    pub fn unbounded_by_order(&self, k: usize, i: usize) -> Result<bool, MapError> {
        match self.output_ball(k, i)? {
            Some(b) if b.r.is_infinite() && b.vague.is_none() => {
                self.balls.borrow_mut().switch();
                let fixed = self.output_ball(k, i);
                self.balls.borrow_mut().switch();
                Ok(fixed?.is_some_and(|f| f.r.is_finite()))
            }
            _ => Ok(false),
        }
    }

    /// The ball of element `i` (physical offset) of output `k` (0, then a tuple root's
    /// further outputs), `None` where no bound is carried (a scatter's or an in-place
    /// update's output).
    pub fn output_ball(&self, k: usize, i: usize) -> Result<Option<Ball>, MapError> {
        use crate::gpu::spec::Root;
        let spec = self.spec;
        let (out, func) = match k {
            0 => (&spec.output, 0),
            _ => match spec.more_outputs.get(k - 1) {
                Some(o) => (&o.tensor, o.func),
                None => return Ok(None),
            },
        };
        let idx = logical_index(out, i)?;
        match &spec.root {
            Root::Elementwise => Ok(Some(self.ball(func, &idx)?)),
            Root::Concatenate { dim, parts } if k == 0 => {
                for &(f, off) in parts {
                    let n = spec.functions[f].dims[*dim];
                    if (off..off + n).contains(&idx[*dim]) {
                        let mut at = idx.clone();
                        at[*dim] -= off;
                        return Ok(Some(self.ball(f, &at)?));
                    }
                }
                Ok(None)
            }
            _ => Ok(None),
        }
    }
}

/// `pred` `and`, `or`, `xor` of two balls: certain where the certain operand decides.
fn pred_binary(op: BinOp, x: Ball, y: Ball) -> f64 {
    let certain = |b: Ball, v: bool| b.r == 0.0 && b.v.is_true() == v;
    match op {
        BinOp::And if certain(x, false) || certain(y, false) => 0.0,
        BinOp::Or if certain(x, true) || certain(y, true) => 0.0,
        _ if x.r == 0.0 && y.r == 0.0 => 0.0,
        _ => 1.0,
    }
}

/// The logical index of the element at physical offset `i` of `out`.
fn logical_index(out: &crate::gpu::spec::Tensor, i: usize) -> Result<Vec<i64>, MapError> {
    let phys = out.physical_dims();
    let mut idx = vec![0i64; out.rank()];
    let mut rest = i as i64;
    for &d in phys.iter().rev() {
        let n = out.dims[d].max(1);
        idx[d] = rest % n;
        rest /= n;
    }
    if rest != 0 {
        return Err(MapError::Other(format!(
            "offset {i} is outside {}",
            out.name
        )));
    }
    Ok(idx)
}

#[cfg(test)]
mod tests {
    use super::super::make_inputs;
    use super::*;

    /// Where the initial value is called harmless, folding terms from it once (the
    /// reference) and from it once per partial result (a kernel's lanes, combined) agree
    /// exactly, on integer types where no rounding blurs it; where it is not, they differ.
    #[test]
    fn harmless_initial_values_fold_alike_once_or_per_lane() {
        let mut s = Stream(11);
        let ops = [
            BinOp::Add,
            BinOp::Mul,
            BinOp::Max,
            BinOp::Min,
            BinOp::And,
            BinOp::Or,
            BinOp::Xor,
        ];
        for t in [ElemType::S32, ElemType::U8, ElemType::Pred] {
            for op in ops {
                if !op.accepts(t) {
                    continue;
                }
                for init in [0.0, 1.0, 5.0, -3.0] {
                    let init = Scalar::from_f64(t, init);
                    let mut differs = false;
                    for k in 0..100 {
                        // any terms, and small odd ones (products that never vanish modulo 2^8; a
                        // negative float converts to an unsigned 0)
                        let mut term = || match k % 2 {
                            0 => s.next(-50.0, 50.0).floor(),
                            _ => 2.0 * s.next(0.0, 3.0).floor() + 1.0,
                        };
                        let xs: Vec<Scalar> = (0..8).map(|_| Scalar::from_f64(t, term())).collect();
                        let fold = |from: Scalar, xs: &[Scalar]| {
                            xs.iter().fold(from, |a, &x| binary(op, t, a, x).unwrap())
                        };
                        let once = fold(init, &xs);
                        // four lanes of two terms, each lane from the initial value
                        let lanes: Vec<Scalar> = xs.chunks(2).map(|c| fold(init, c)).collect();
                        let per_lane = lanes[1..]
                            .iter()
                            .fold(lanes[0], |a, &x| binary(op, t, a, x).unwrap());
                        differs |= once != per_lane;
                    }
                    let harmless = init_is_harmless(op, init.to_f64(t), t);
                    assert_eq!(!differs, harmless, "{} {t:?} init {init}", op.hlo_name());
                }
            }
        }
    }

    /// A deterministic stream of values in `[lo, hi)`.
    struct Stream(u64);
    impl Stream {
        fn next(&mut self, lo: f64, hi: f64) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((self.0 >> 11) as f64 / (1u64 << 53) as f64)
        }
    }

    fn exact_unary(op: UnOp, x: f64) -> f64 {
        match op {
            UnOp::Erf => super::super::erf(x),
            UnOp::Rsqrt => 1.0 / x.sqrt(),
            UnOp::Logistic => 1.0 / (1.0 + (-x).exp()),
            _ => super::super::unary_f64(op, x),
        }
    }

    /// Every unary function's change over a ball, sampled at its ends and inside, stays
    /// within [`unary_delta`]: the slopes and Hölder bounds are what the functions do.
    #[test]
    fn unary_deltas_bound_every_sampled_change() {
        let ops = [
            UnOp::Neg,
            UnOp::Abs,
            UnOp::Exp,
            UnOp::Expm1,
            UnOp::Log,
            UnOp::Log1p,
            UnOp::Sqrt,
            UnOp::Rsqrt,
            UnOp::Cbrt,
            UnOp::Tanh,
            UnOp::Logistic,
            UnOp::Sin,
            UnOp::Cos,
            UnOp::Erf,
            UnOp::Sign,
            UnOp::Floor,
            UnOp::Ceil,
            UnOp::RoundAfz,
            UnOp::RoundEven,
        ];
        let mut s = Stream(7);
        for op in ops {
            for k in 0..4000 {
                let scale = [1e-3, 1.0, 30.0, 1e4][k % 4];
                let a = s.next(-scale, scale);
                let r = s.next(0.0, scale) * [1e-6, 1e-2, 0.5, 2.0][(k / 4) % 4];
                let d = unary_delta(op, a, r);
                let fa = exact_unary(op, a);
                if !fa.is_finite() {
                    continue;
                }
                for t in [-1.0, -0.5, -0.01, 0.01, 0.5, 1.0] {
                    let x = a + t * r;
                    let fx = exact_unary(op, x);
                    if fx.is_nan() {
                        // Outside the function's domain: the bound must not claim one.
                        assert!(d.is_infinite(), "{op:?} at {a} ± {r}: {d} over a NaN");
                        continue;
                    }
                    // The sample's own f64 roundings (of `x` and of `f(x)`) aside.
                    let moved = (fx - fa).abs();
                    let f64_noise = 1e-14 * (fx.abs() + fa.abs() + a.abs() + 1e-300);
                    assert!(
                        moved <= d * (1.0 + 1e-9) + f64_noise,
                        "{op:?} at {a} ± {r}: moved {moved} at {x}, bound {d}"
                    );
                }
            }
        }
    }

    /// The binary operations' changes over two balls, sampled at their corners and
    /// inside, stay within [`binary_delta`]; a comparison called certain gives one answer
    /// over both balls.
    #[test]
    fn binary_deltas_and_certain_comparisons_hold_on_samples() {
        let ops = [
            BinOp::Add,
            BinOp::Sub,
            BinOp::Mul,
            BinOp::Div,
            BinOp::Max,
            BinOp::Min,
            BinOp::Pow,
        ];
        let dirs = [
            CmpDir::Eq,
            CmpDir::Ne,
            CmpDir::Lt,
            CmpDir::Le,
            CmpDir::Gt,
            CmpDir::Ge,
        ];
        let mut s = Stream(11);
        for k in 0..20000 {
            let scale = [1e-2, 1.0, 100.0][k % 3];
            let (a, b) = (s.next(-scale, scale), s.next(-scale, scale));
            let ra = s.next(0.0, scale) * [0.0, 1e-4, 0.1, 1.5][(k / 3) % 4];
            let rb = s.next(0.0, scale) * [0.0, 1e-4, 0.1, 1.5][(k / 12) % 4];
            let corners = [-1.0, -0.3, 0.0, 0.7, 1.0];
            for op in ops {
                let d = binary_delta(op, a, ra, b, rb);
                let f = |x: f64, y: f64| super::super::binary_f(op, x, y);
                let fab = f(a, b);
                if !fab.is_finite() {
                    continue;
                }
                for ta in corners {
                    for tb in corners {
                        let v = f(a + ta * ra, b + tb * rb);
                        if v.is_nan() {
                            assert!(d.is_infinite(), "{op:?} {a}±{ra} {b}±{rb}: NaN inside");
                            continue;
                        }
                        let moved = (v - fab).abs();
                        let f64_noise = 1e-14 * (v.abs() + fab.abs() + 1e-300);
                        assert!(
                            moved <= d * (1.0 + 1e-9) + f64_noise,
                            "{op:?} {a}±{ra}, {b}±{rb}: moved {moved}, bound {d}"
                        );
                    }
                }
            }
            for dir in dirs {
                if !compare_certain(dir, a, ra, b, rb) {
                    continue;
                }
                let c = |x: f64, y: f64| {
                    super::super::compare(dir, ElemType::F64, Scalar::F(x), Scalar::F(y))
                };
                for ta in corners {
                    for tb in corners {
                        assert_eq!(
                            c(a + ta * ra, b + tb * rb),
                            c(a, b),
                            "{dir:?} {a}±{ra} {b}±{rb} called certain"
                        );
                    }
                }
            }
        }
    }

    /// A value rounded to a 16-bit type on both sides from operands that differ within
    /// their radii stays in the rounded radius: the double rounding of f32 then bf16
    /// included.
    #[test]
    fn a_rounding_to_16_bits_stays_within_the_rounded_radius() {
        let mut s = Stream(3);
        for t in [ElemType::BF16, ElemType::F16, ElemType::F32] {
            for _ in 0..20000 {
                let x = s.next(-300.0, 300.0);
                let r = x.abs() * s.next(0.0, 1e-5);
                let y = x + s.next(-r, r);
                let (fx, fy) = (
                    super::super::round_float(t, x as f32 as f64),
                    super::super::round_float(t, y as f32 as f64),
                );
                assert!(
                    (fx - fy).abs() <= rounded(t, fx, r, 0.0),
                    "{t:?}: {x} -> {fx}, {y} -> {fy}, radius {r}"
                );
            }
        }
    }

    /// The real RMS norm of the H100 dumps (f32 sum of squares, `rsqrt`, a bf16 rounding,
    /// a bf16 multiply by the gain) at 13x500: every element of a realisation that sums in
    /// f64 and rounds only where the HLO converts is inside its element's ball; the value
    /// of the next element of the row, where it is another value, is outside (an indexing
    /// error is not mistaken for rounding).
    #[test]
    fn a_bf16_norm_realised_otherwise_lies_in_its_balls_and_a_neighbour_does_not() {
        let mut s = crate::session::Session::new();
        s.execute(
            "addf {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n\
             rms {\n  g = bf16[500] parameter(0)\n  x = bf16[13,500] parameter(1)\n\
             xf = f32[13,500] convert(x)\n  sq = f32[13,500] multiply(xf, xf)\n  z = f32[] constant(0)\n\
             ss = f32[13] reduce(sq, z), dimensions={1}, to_apply=addf\n\
             c = f32[] constant(0.002)\n  cb = f32[13] broadcast(c), dimensions={}\n\
             m = f32[13] multiply(ss, cb)\n  e = f32[] constant(1e-06)\n  eb = f32[13] broadcast(e), dimensions={}\n\
             a = f32[13] add(m, eb)\n  rs = f32[13] rsqrt(a)\n  rb = f32[13,500] broadcast(rs), dimensions={0}\n\
             y = f32[13,500] multiply(xf, rb)\n  yb = bf16[13,500] convert(y)\n\
             gb = bf16[13,500] broadcast(g), dimensions={1}\n  ROOT o = bf16[13,500] multiply(yb, gb)\n}\n",
        );
        let spec = crate::gpu::sweep::spec_for(&s.hlo, "rms")
            .expect("rms is defined")
            .expect("rms adapts");
        let inputs = make_inputs(&spec).unwrap();
        let r = Reference::new(&spec, &inputs).unwrap();
        let want = r.output().unwrap();
        let bf = |v: f64| super::super::round_float(ElemType::BF16, v);
        let (g, x) = (&inputs[0], &inputs[1]);
        let read = |b: &Vec<u8>, i: usize| super::super::read_value(b, ElemType::BF16, i);
        let mut alt = vec![0.0; 13 * 500];
        for row in 0..13 {
            let ss: f64 = (0..500).map(|j| read(x, row * 500 + j).powi(2)).sum();
            let rs = 1.0 / (ss * 0.002 + 1e-6).sqrt();
            for j in 0..500 {
                let xv = read(x, row * 500 + j);
                alt[row * 500 + j] = bf(bf(xv * rs) * read(g, j));
            }
        }
        let mut neighbours_refused = 0;
        for i in 0..alt.len() {
            let b = r.output_ball(0, i).unwrap().expect("a bound is carried");
            let w = want[i].to_f64(ElemType::BF16);
            assert!(b.r.is_finite() && b.vague.is_none());
            assert!(
                b.holds(ElemType::BF16, alt[i]),
                "element {i}: {} not in {w} ± {}",
                alt[i],
                b.r
            );
            if i % 500 != 499 && (alt[i + 1] - w).abs() > 4.0 * 2f64.powi(-8) * w.abs() {
                assert!(
                    !b.holds(ElemType::BF16, alt[i + 1]),
                    "element {i} takes its neighbour's {}",
                    alt[i + 1]
                );
                neighbours_refused += 1;
            }
        }
        assert!(neighbours_refused > 5000, "{neighbours_refused}");
    }

    /// A layer norm accumulated in bf16 at 13x32, realised as the row kernel sums (a warp a
    /// row, the lanes' values combined by butterfly exchanges) with every operation rounded
    /// to bf16: each element lies in its ball, and some differ from the reference by more
    /// than the bf16 tolerance (the sums' orders differ), so the ball is what accepts them.
    #[test]
    fn a_bf16_layer_norm_summed_as_the_lanes_sum_lies_in_its_balls() {
        let mut s = crate::session::Session::new();
        s.execute(
            "addb {\n  a = bf16[] parameter(0)\n  b = bf16[] parameter(1)\n  ROOT s = bf16[] add(a, b)\n}\n\
             ln {\n  b = bf16[32] parameter(0)\n  x = bf16[13,32] parameter(1)\n  g = bf16[32] parameter(2)\n\
             z = bf16[] constant(0)\n  s = bf16[13] reduce(x, z), dimensions={1}, to_apply=addb\n\
             k = bf16[] constant(0.03125)\n  kb = bf16[13] broadcast(k), dimensions={}\n\
             mean = bf16[13] multiply(s, kb)\n  mb = bf16[13,32] broadcast(mean), dimensions={0}\n\
             dev = bf16[13,32] subtract(x, mb)\n  sq = bf16[13,32] multiply(dev, dev)\n\
             ss = bf16[13] reduce(sq, z), dimensions={1}, to_apply=addb\n  var = bf16[13] multiply(ss, kb)\n\
             e = bf16[] constant(1e-05)\n  eb = bf16[13] broadcast(e), dimensions={}\n\
             ve = bf16[13] add(var, eb)\n  rs = bf16[13] rsqrt(ve)\n  rb = bf16[13,32] broadcast(rs), dimensions={0}\n\
             n = bf16[13,32] multiply(dev, rb)\n  gb = bf16[13,32] broadcast(g), dimensions={1}\n\
             ng = bf16[13,32] multiply(n, gb)\n  bb = bf16[13,32] broadcast(b), dimensions={1}\n\
             ROOT o = bf16[13,32] add(ng, bb)\n}\n",
        );
        let spec = crate::gpu::sweep::spec_for(&s.hlo, "ln")
            .expect("ln is defined")
            .expect("ln adapts");
        let inputs = make_inputs(&spec).unwrap();
        let r = Reference::new(&spec, &inputs).unwrap();
        let want = r.output().unwrap();
        let bf = |v: f64| super::super::round_float(ElemType::BF16, v);
        let read = |k: usize, i: usize| super::super::read_value(&inputs[k], ElemType::BF16, i);
        // the 32 lanes' values summed by butterfly exchanges, each sum rounded to bf16
        let lanes_sum = |v: &[f64]| {
            let mut l = v.to_vec();
            for off in [16, 8, 4, 2, 1] {
                l = (0..32).map(|i| bf(l[i] + l[i ^ off])).collect();
            }
            l[0]
        };
        let (k, e) = (bf(0.03125), bf(1e-5));
        let (mut beyond_tolerance, mut n) = (0, 0);
        for row in 0..13 {
            let x: Vec<f64> = (0..32).map(|j| read(1, row * 32 + j)).collect();
            let mean = bf(lanes_sum(&x) * k);
            let dev: Vec<f64> = x.iter().map(|&v| bf(v - mean)).collect();
            let sq: Vec<f64> = dev.iter().map(|&d| bf(d * d)).collect();
            let ve = bf(bf(lanes_sum(&sq) * k) + e);
            let rs = bf(1.0 / ve.sqrt());
            for j in 0..32 {
                let alt = bf(bf(bf(dev[j] * rs) * read(2, j)) + read(0, j));
                let i = row * 32 + j;
                let b = r.output_ball(0, i).unwrap().expect("a bound is carried");
                assert!(b.vague.is_none());
                assert!(
                    b.holds(ElemType::BF16, alt),
                    "element {i}: {alt} not in {:?}",
                    b
                );
                let w = want[i].to_f64(ElemType::BF16);
                beyond_tolerance += !super::super::matches(alt, w, 8e-3) as usize;
                n += 1;
            }
        }
        assert!(beyond_tolerance > 0, "none of {n} elements rounds apart");
    }
}
