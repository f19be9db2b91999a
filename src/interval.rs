//! Inclusive integer intervals and the range evaluator that bounds any expression over a
//! domain ("what interval is this expression in?").
//!
//! Arithmetic never overflows silently: a bound that does not fit in i64 widens the result
//! to the whole line ([`Interval::FULL`], printed as an unknown range), which is always sound.
//! FULL stands for any integer, a value past 64 bits included (intermediate values are
//! exact): a quotient, min or max of it is FULL too.
//!
//! ```text
//! d0 in [0, 9], d1 in [0, 15]:  d0 * 16 + d1  in [0, 159]
//!                               (d0 * 16 + d1) floordiv 8  in [0, 19]
//!                               d1 mod 4  in [0, 3]
//! ```

use crate::expr::{arith as eval, Expr, ExprKind, Op};
use std::fmt;

/// The integers `lo..=hi`; empty when `lo > hi`.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Interval {
    pub lo: i64,
    pub hi: i64,
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {}]", self.lo, self.hi)
    }
}

impl Interval {
    /// Every i64: the interval of an expression nothing is known about.
    pub const FULL: Interval = Interval {
        lo: i64::MIN,
        hi: i64::MAX,
    };

    pub fn new(lo: i64, hi: i64) -> Interval {
        Interval { lo, hi }
    }
    pub fn point(v: i64) -> Interval {
        Interval { lo: v, hi: v }
    }
    pub fn is_empty(&self) -> bool {
        self.lo > self.hi
    }
    pub fn is_point(&self) -> bool {
        self.lo == self.hi
    }
    pub fn is_full(&self) -> bool {
        *self == Interval::FULL
    }
    pub fn contains(&self, v: i64) -> bool {
        self.lo <= v && v <= self.hi
    }
    /// Whether every point of `other` is in `self`.
    pub fn contains_interval(&self, other: &Interval) -> bool {
        other.is_empty() || (self.lo <= other.lo && other.hi <= self.hi)
    }
    pub fn intersect(&self, other: &Interval) -> Interval {
        Interval {
            lo: self.lo.max(other.lo),
            hi: self.hi.min(other.hi),
        }
    }
    pub fn union_hull(&self, other: &Interval) -> Interval {
        if self.is_empty() {
            return *other;
        }
        if other.is_empty() {
            return *self;
        }
        Interval {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }
    /// Number of points, if it fits in u64 (`Some(0)` when empty).
    pub fn size(&self) -> Option<u64> {
        if self.is_empty() {
            return Some(0);
        }
        let n = (self.hi as i128) - (self.lo as i128) + 1;
        u64::try_from(n).ok()
    }

    fn from_i128(lo: i128, hi: i128) -> Interval {
        match (i64::try_from(lo), i64::try_from(hi)) {
            (Ok(lo), Ok(hi)) => Interval { lo, hi },
            _ => Interval::FULL,
        }
    }

    pub fn add(&self, o: &Interval) -> Interval {
        if self.is_full() || o.is_full() {
            return Interval::FULL;
        }
        Interval::from_i128(
            self.lo as i128 + o.lo as i128,
            self.hi as i128 + o.hi as i128,
        )
    }
    pub fn neg(&self) -> Interval {
        Interval::from_i128(-(self.hi as i128), -(self.lo as i128))
    }
    pub fn mul(&self, o: &Interval) -> Interval {
        if (self.is_full() && !o.is_point()) || (o.is_full() && !self.is_point()) {
            return Interval::FULL;
        }
        let c = [
            self.lo as i128 * o.lo as i128,
            self.lo as i128 * o.hi as i128,
            self.hi as i128 * o.lo as i128,
            self.hi as i128 * o.hi as i128,
        ];
        Interval::from_i128(*c.iter().min().unwrap_or(&0), *c.iter().max().unwrap_or(&0))
    }
    pub fn floordiv(&self, o: &Interval) -> Interval {
        if self.is_full() {
            // FULL may stand for a value past 64 bits (intermediate values are exact):
            // its quotient is not bounded by MIN / c and MAX / c
            return Interval::FULL;
        }
        if o.is_point() && o.lo < 0 && o.lo != i64::MIN {
            // a floordiv -c = (-a) floordiv c: decreasing in a.
            return self.neg().floordiv(&Interval::point(-o.lo));
        }
        if o.lo <= 0 {
            return Interval::FULL;
        }
        let lo = [
            eval::floor_div(self.lo, o.lo),
            eval::floor_div(self.lo, o.hi),
        ];
        let hi = [
            eval::floor_div(self.hi, o.lo),
            eval::floor_div(self.hi, o.hi),
        ];
        Interval {
            lo: lo[0].min(lo[1]),
            hi: hi[0].max(hi[1]),
        }
    }
    pub fn ceildiv(&self, o: &Interval) -> Interval {
        if self.is_full() {
            return Interval::FULL; // as for floordiv
        }
        if o.is_point() && o.lo < 0 && o.lo != i64::MIN {
            // a ceildiv -c = -(a floordiv c).
            return self.floordiv(&Interval::point(-o.lo)).neg();
        }
        if o.lo <= 0 {
            return Interval::FULL;
        }
        let cd = |a, b| eval::ceil_div(a, b);
        match (
            cd(self.lo, o.lo),
            cd(self.lo, o.hi),
            cd(self.hi, o.lo),
            cd(self.hi, o.hi),
        ) {
            (Some(a), Some(b), Some(c), Some(d)) => Interval {
                lo: a.min(b),
                hi: c.max(d),
            },
            _ => Interval::FULL,
        }
    }
    pub fn modulo(&self, o: &Interval) -> Interval {
        if o.is_point() && o.lo < 0 && o.lo != i64::MIN {
            // a mod -c = -((-a) mod c), in [-c + 1, 0].
            return self.neg().modulo(&Interval::point(-o.lo)).neg();
        }
        if o.lo <= 0 {
            return Interval::FULL;
        }
        if o.is_point() {
            let c = o.lo;
            if eval::floor_div(self.lo, c) == eval::floor_div(self.hi, c) {
                return Interval {
                    lo: eval::modulo(self.lo, c),
                    hi: eval::modulo(self.hi, c),
                };
            }
            return Interval { lo: 0, hi: c - 1 };
        }
        if self.lo >= 0 && self.hi < o.lo {
            return *self;
        }
        Interval {
            lo: 0,
            hi: o.hi - 1,
        }
    }
    pub fn apply(op: Op, a: &Interval, b: &Interval) -> Interval {
        if a.is_empty() || b.is_empty() {
            return Interval { lo: 1, hi: 0 };
        }
        match op {
            Op::Add => a.add(b),
            Op::Mul => a.mul(b),
            Op::FloorDiv => a.floordiv(b),
            Op::CeilDiv => a.ceildiv(b),
            Op::Mod => a.modulo(b),
            // a FULL operand may be a value past 64 bits on either side
            Op::Min | Op::Max if a.is_full() || b.is_full() => Interval::FULL,
            Op::Min => Interval::new(a.lo.min(b.lo), a.hi.min(b.hi)),
            Op::Max => Interval::new(a.lo.max(b.lo), a.hi.max(b.hi)),
        }
    }
}

/// The interval of `e` when variable `i` ranges over `bounds[i]`.
///
/// Sound (every value `e` takes is inside) but not always tight: `d0 - d0` gets
/// `[-9, 9]` for `d0 in [0, 9]`; the canonical linear form removes such cases first.
pub fn range_of(e: Expr, bounds: &[Interval]) -> Interval {
    match e.kind() {
        ExprKind::Const(c) => Interval::point(c),
        ExprKind::Var(v) => bounds.get(v as usize).copied().unwrap_or(Interval::FULL),
        ExprKind::Bin(op, a, b) => Interval::apply(op, &range_of(a, bounds), &range_of(b, bounds)),
    }
}

/// XLA's convention for a bound that overflows (its `RangeEvaluator`'s `Interval`): the
/// bound saturates at `i64::MIN` (lower) or `i64::MAX` (upper) and then stands for "no
/// bound on that side", so `[1, i64::MAX]` is every integer from 1 up, one past 64 bits
/// included. The other bound keeps what it knows, where [`Interval::apply`] gives up to
/// [`Interval::FULL`] (unknown).
///
/// The two conventions live side by side on purpose: every rewrite (the simplifier, tiles,
/// emitters) reads an interval from [`range_of`], whose bounds are exact or FULL, so a
/// saturated bound is never taken as an exact one; the saturated ranges are what `ranges`
/// reports, beside ixmap's own.
///
/// ```text
/// d0 in [0, 3]:  d0 + 9223372036854775800         XLA [9223372036854775800, 9223372036854775807] (upper saturated)
///                d0 * 4611686018427387904 floordiv 2305843009213693952
///                                                  XLA [0, 9223372036854775807] (the product saturates)
///                                                  ixmap [0, 6] (intermediates exact: range_wide)
/// ```
mod saturated {
    use super::Interval;
    use crate::expr::Op;

    /// A bound over the extended integers: `NEG`/`POS` are the infinities, every other
    /// value is finite and within `±LIMIT`.
    pub(super) type B = i128;
    pub(super) const NEG: B = i128::MIN;
    pub(super) const POS: B = i128::MAX;
    const LIMIT: B = 1 << 120;

    #[derive(Copy, Clone, Debug)]
    pub(super) struct W {
        pub lo: B,
        pub hi: B,
    }

    impl W {
        /// An i64 interval read with XLA's convention.
        pub fn from_i64(iv: Interval) -> W {
            W {
                lo: if iv.lo == i64::MIN { NEG } else { iv.lo as B },
                hi: if iv.hi == i64::MAX { POS } else { iv.hi as B },
            }
        }
        /// Back to i64, saturating: a lower bound below i64 is none, one above is lowered
        /// to i64::MAX (still below every value); symmetrically for the upper bound.
        pub fn to_i64(self) -> Interval {
            let c = |x: B| x.clamp(i64::MIN as B, i64::MAX as B) as i64;
            Interval {
                lo: c(self.lo),
                hi: c(self.hi),
            }
        }
        /// Finite bounds beyond `±LIMIT` become infinite (or `LIMIT` for a lower bound
        /// above it), so the next operation cannot overflow i128.
        pub fn clamp(self) -> W {
            let lo = if self.lo == NEG || self.lo < -LIMIT {
                NEG
            } else {
                self.lo.min(LIMIT)
            };
            let hi = if self.hi == POS || self.hi > LIMIT {
                POS
            } else {
                self.hi.max(-LIMIT)
            };
            W { lo, hi }
        }
        fn point(&self) -> Option<B> {
            (self.lo == self.hi && self.lo != NEG && self.hi != POS).then_some(self.lo)
        }
    }

    fn is_inf(x: B) -> bool {
        x == NEG || x == POS
    }

    /// `x + y` for two lower (or two upper) bounds: an infinite one wins.
    fn add_b(x: B, y: B) -> B {
        if is_inf(x) {
            x
        } else if is_inf(y) {
            y
        } else {
            x + y
        }
    }

    fn neg_b(x: B) -> B {
        match x {
            NEG => POS,
            POS => NEG,
            x => -x,
        }
    }

    /// `x · y` for a corner: zero times anything is zero (every value is a finite integer,
    /// however large), an infinity keeps the product's sign.
    fn mul_b(x: B, y: B) -> B {
        if x == 0 || y == 0 {
            return 0;
        }
        let neg = (x < 0) != (y < 0);
        if is_inf(x) || is_inf(y) {
            return if neg { NEG } else { POS };
        }
        x.checked_mul(y).unwrap_or(if neg { NEG } else { POS })
    }

    /// `x floordiv y` for a corner, `y > 0`: an infinite dividend keeps its sign; a finite
    /// one over an unbounded divisor is 0 or -1.
    fn fdiv_b(x: B, y: B) -> B {
        if is_inf(x) {
            return x;
        }
        if y == POS {
            return if x >= 0 { 0 } else { -1 };
        }
        x.div_euclid(y)
    }

    fn neg(a: W) -> W {
        W {
            lo: neg_b(a.hi),
            hi: neg_b(a.lo),
        }
    }

    fn floordiv(a: W, o: W) -> W {
        if o.hi < 0 {
            // a floordiv b = (-a) floordiv (-b)
            return floordiv(neg(a), neg(o));
        }
        if o.lo <= 0 {
            return W { lo: NEG, hi: POS };
        }
        // floor(x / y) rises with x and moves monotonically with y: the corners bound it.
        W {
            lo: fdiv_b(a.lo, o.lo).min(fdiv_b(a.lo, o.hi)),
            hi: fdiv_b(a.hi, o.lo).max(fdiv_b(a.hi, o.hi)),
        }
    }

    fn modulo(a: W, o: W) -> W {
        if o.hi < 0 {
            // a mod b = -((-a) mod (-b)), from a = b·(a floordiv b) + a mod b
            return neg(modulo(neg(a), neg(o)));
        }
        if o.lo <= 0 {
            return W { lo: NEG, hi: POS };
        }
        let bounded = !is_inf(a.lo) && !is_inf(a.hi);
        if let Some(c) = o.point() {
            if bounded && a.lo.div_euclid(c) == a.hi.div_euclid(c) {
                return W {
                    lo: a.lo.rem_euclid(c),
                    hi: a.hi.rem_euclid(c),
                };
            }
            return W { lo: 0, hi: c - 1 };
        }
        if bounded && a.lo >= 0 && a.hi < o.lo {
            return a;
        }
        W {
            lo: 0,
            hi: add_b(o.hi, -1),
        }
    }

    /// One operation over extended bounds, exact up to the hull (no rounding inward).
    pub(super) fn apply(op: Op, a: W, b: W) -> W {
        match op {
            Op::Add => W {
                lo: add_b(a.lo, b.lo),
                hi: add_b(a.hi, b.hi),
            },
            Op::Mul => {
                let c = [
                    mul_b(a.lo, b.lo),
                    mul_b(a.lo, b.hi),
                    mul_b(a.hi, b.lo),
                    mul_b(a.hi, b.hi),
                ];
                W {
                    lo: *c.iter().min().unwrap(),
                    hi: *c.iter().max().unwrap(),
                }
            }
            Op::FloorDiv => floordiv(a, b),
            // a ceildiv b = -((-a) floordiv b)
            Op::CeilDiv => neg(floordiv(neg(a), b)),
            Op::Mod => modulo(a, b),
            Op::Min => W {
                lo: a.lo.min(b.lo),
                hi: a.hi.min(b.hi),
            },
            Op::Max => W {
                lo: a.lo.max(b.lo),
                hi: a.hi.max(b.hi),
            },
        }
        .clamp()
    }
}

impl Interval {
    /// Whether the lower bound is saturated (XLA's convention: none).
    pub fn lo_saturated(&self) -> bool {
        !self.is_empty() && self.lo == i64::MIN
    }
    /// Whether the upper bound is saturated (XLA's convention: none).
    pub fn hi_saturated(&self) -> bool {
        !self.is_empty() && self.hi == i64::MAX
    }
    /// `a op b` under XLA's convention: both operands and the result read `i64::MIN` /
    /// `i64::MAX` bounds as saturated; a bound that overflows saturates, the other stays.
    pub fn saturating(op: Op, a: &Interval, b: &Interval) -> Interval {
        if a.is_empty() || b.is_empty() {
            return Interval { lo: 1, hi: 0 };
        }
        saturated::apply(op, saturated::W::from_i64(*a), saturated::W::from_i64(*b)).to_i64()
    }
}

/// The interval of `e` as XLA's range evaluator computes it: 64-bit bounds, each operation
/// saturating a bound that overflows (see [`Interval::saturating`]).
pub fn range_saturated(e: Expr, bounds: &[Interval]) -> Interval {
    match e.kind() {
        ExprKind::Const(c) => Interval::point(c),
        ExprKind::Var(v) => bounds.get(v as usize).copied().unwrap_or(Interval::FULL),
        ExprKind::Bin(op, a, b) => {
            Interval::saturating(op, &range_saturated(a, bounds), &range_saturated(b, bounds))
        }
    }
}

/// The interval of `e` with exact intermediates (ixmap's evaluation semantics, SPEC §2:
/// intermediate arithmetic is exact): bounds are carried in 128 bits and saturate only
/// in the result, so `d0 * 2^62 floordiv 2^61` is `[0, 6]` for `d0 in [0, 3]` where
/// [`range_saturated`] saturates the product. Saturated bounds read as in XLA.
pub fn range_wide(e: Expr, bounds: &[Interval]) -> Interval {
    fn go(e: Expr, bounds: &[Interval]) -> Option<saturated::W> {
        Some(match e.kind() {
            ExprKind::Const(c) => saturated::W::from_i64(Interval::point(c)),
            ExprKind::Var(v) => {
                saturated::W::from_i64(bounds.get(v as usize).copied().unwrap_or(Interval::FULL))
            }
            ExprKind::Bin(op, a, b) => {
                let (x, y) = (go(a, bounds)?, go(b, bounds)?);
                if x.lo > x.hi || y.lo > y.hi {
                    return None;
                }
                saturated::apply(op, x, y)
            }
        })
    }
    match go(e, bounds) {
        Some(w) if w.lo <= w.hi => w.to_i64(),
        _ => Interval { lo: 1, hi: 0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_bound_their_results() {
        let a = Interval::new(-7, 9);
        let c = Interval::point(4);
        assert_eq!(a.floordiv(&c), Interval::new(-2, 2));
        assert_eq!(a.ceildiv(&c), Interval::new(-1, 3));
        assert_eq!(a.modulo(&c), Interval::new(0, 3));
        assert_eq!(
            Interval::new(53, 71).modulo(&Interval::point(42)),
            Interval::new(11, 29)
        );
        assert_eq!(
            Interval::new(30, 50).modulo(&Interval::point(42)),
            Interval::new(0, 41)
        );
        assert_eq!(
            Interval::new(43, 71).modulo(&Interval::point(42)),
            Interval::new(1, 29)
        );
        assert_eq!(a.mul(&Interval::point(-2)), Interval::new(-18, 14));
    }

    #[test]
    fn overflow_widens_to_full() {
        let big = Interval::new(0, i64::MAX);
        assert_eq!(big.add(&Interval::point(1)), Interval::FULL);
        assert_eq!(big.mul(&Interval::point(2)), Interval::FULL);
        assert_eq!(Interval::point(i64::MIN).neg(), Interval::FULL);
    }
}
