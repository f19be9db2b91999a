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
