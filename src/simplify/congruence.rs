//! Congruence (modulus-remainder) facts, as Halide's `ModulusRemainder`: a value known to
//! lie in `m·ℤ + r`. Every e-class carries one beside its interval (`analysis.rs`); the
//! interval is snapped to the class (its ends moved inward to the nearest values `≡ r`),
//! so a `mod` whose dividend is a multiple of the divisor becomes a constant, and a sum
//! whose parts are all multiples of `c` is divided exactly.
//!
//! ```text
//! d0 * 6 + 3             ∈ 6ℤ + 3
//! (d0 * 6 + 3) mod 3     ∈ 0ℤ + 0   (the constant 0: 3 divides 6)
//! (d0 * 6 + 3) fd 3      ∈ 2ℤ + 1
//! min(d0 * 4, d1 * 6 + 2) ∈ 2ℤ + 0
//! x in [1, 17], x ∈ 4ℤ + 3  →  x in [3, 15]
//! ```
//!
//! `m = 0` means the value is exactly `r`; `m = 1` means nothing is known. Every
//! operation is checked: an overflow gives the weaker fact `1ℤ + 0`, which always holds.
//! Each transfer function is proven for all integers in `tests/smt/rules.py`
//! (`congruence-*`).

use super::rules::gcd;
use crate::expr::arith::{ceil_div, floor_div, modulo};
use crate::expr::Op;
use crate::interval::Interval;

/// The value lies in `m·ℤ + r` (`m >= 0`; `0 <= r < m` when `m > 0`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Congruence {
    pub m: i64,
    pub r: i64,
}

impl Congruence {
    /// Nothing known: every integer.
    pub const TOP: Congruence = Congruence { m: 1, r: 0 };

    /// Exactly `c`.
    pub fn exact(c: i64) -> Congruence {
        Congruence { m: 0, r: c }
    }

    /// `m·ℤ + r`, normalised (`m < 0` is read as `|m|`; an overflow gives [`Self::TOP`]).
    pub fn new(m: i64, r: i64) -> Congruence {
        let Some(m) = m.checked_abs() else {
            return Congruence::TOP;
        };
        if m == 0 {
            return Congruence::exact(r);
        }
        Congruence { m, r: modulo(r, m) }
    }

    /// The value, when the class is a single integer.
    pub fn constant(&self) -> Option<i64> {
        (self.m == 0).then_some(self.r)
    }

    /// Whether every value of the class is a multiple of `c > 0`.
    pub fn divisible_by(&self, c: i64) -> bool {
        c > 0 && self.m % c == 0 && self.r % c == 0
    }

    /// The fact for `op(a, b)`.
    pub fn apply(op: Op, a: Congruence, b: Congruence) -> Congruence {
        Self::try_apply(op, a, b).unwrap_or(Congruence::TOP)
    }

    fn try_apply(op: Op, a: Congruence, b: Congruence) -> Option<Congruence> {
        Some(match op {
            // (a.m·x + a.r) + (b.m·y + b.r) ∈ gcd(a.m, b.m)·ℤ + a.r + b.r
            Op::Add => Congruence::new(gcd(a.m, b.m), a.r.checked_add(b.r)?),
            // (a.m·x + a.r)(b.m·y + b.r) = a.m·b.m·xy + a.m·b.r·x + b.m·a.r·y + a.r·b.r
            Op::Mul => {
                let m = gcd(
                    gcd(a.m.checked_mul(b.m)?, a.m.checked_mul(b.r)?),
                    b.m.checked_mul(a.r)?,
                );
                Congruence::new(m, a.r.checked_mul(b.r)?)
            }
            // (m·x + r) fd c = (m / c)·x + r fd c      when c > 0 divides m
            Op::FloorDiv => {
                let c = b.constant().filter(|&c| c > 0)?;
                match a.constant() {
                    Some(v) => Congruence::exact(floor_div(v, c)),
                    None if a.m % c == 0 => Congruence::new(a.m / c, floor_div(a.r, c)),
                    None => return None,
                }
            }
            // (m·x + r) cd c = (m / c)·x + r cd c      when c > 0 divides m
            Op::CeilDiv => {
                let c = b.constant().filter(|&c| c > 0)?;
                match a.constant() {
                    Some(v) => Congruence::exact(ceil_div(v, c)?),
                    None if a.m % c == 0 => Congruence::new(a.m / c, ceil_div(a.r, c)?),
                    None => return None,
                }
            }
            // (m·x + r) mod c = r mod c                when c > 0 divides m;
            // x mod c = x - c·(x fd c) ∈ gcd(m, c)·ℤ + r  otherwise
            Op::Mod => {
                let c = b.constant().filter(|&c| c > 0)?;
                match a.constant() {
                    Some(v) => Congruence::exact(modulo(v, c)),
                    None if a.m % c == 0 => Congruence::exact(modulo(a.r, c)),
                    None => Congruence::new(gcd(a.m, c), a.r),
                }
            }
            // min and max are one of the two operands: the class holding both
            Op::Min | Op::Max => a.union(b)?,
        })
    }

    /// The smallest class holding both (`None` on overflow).
    fn union(self, b: Congruence) -> Option<Congruence> {
        let diff = self.r.checked_sub(b.r)?;
        let m = gcd(gcd(self.m, b.m), diff);
        Some(Congruence::new(m, self.r))
    }

    /// The values in both classes (Chinese remainder theorem): `None` when they share none
    /// (only possible where the domain is empty); the stronger of the two on overflow.
    pub fn intersect(self, b: Congruence) -> Option<Congruence> {
        match (self.constant(), b.constant()) {
            (Some(x), Some(y)) => return (x == y).then_some(self),
            (Some(x), None) => return b.contains(x).then_some(self),
            (None, Some(y)) => return self.contains(y).then_some(b),
            (None, None) => {}
        }
        let (m1, r1, m2, r2) = (self.m as i128, self.r as i128, b.m as i128, b.r as i128);
        let g = gcd(self.m, b.m) as i128;
        if (r2 - r1) % g != 0 {
            return None;
        }
        let stronger = if self.m >= b.m { self } else { b };
        // r = r1 + m1·t with m1·t ≡ r2 - r1 (mod m2): t ≡ ((r2 - r1) / g)·inv(m1 / g) (mod m2 / g)
        let l = m1 / g * m2;
        let Ok(l64) = i64::try_from(l) else {
            return Some(stronger);
        };
        let n = m2 / g;
        let t = ((r2 - r1) / g).rem_euclid(n) * inverse(m1 / g, n) % n;
        let r = (r1 + m1 * t).rem_euclid(l);
        Some(Congruence::new(l64, r as i64))
    }

    /// Whether `v` is in the class.
    pub fn contains(&self, v: i64) -> bool {
        match self.m {
            0 => v == self.r,
            m => modulo(v, m) == self.r,
        }
    }

    /// `iv` with its ends moved inward to the nearest members of the class (an end at the
    /// edge of i64, an unknown bound, is left where it is).
    pub fn snap(&self, iv: Interval) -> Interval {
        if iv.is_empty() {
            return iv;
        }
        if self.m == 0 {
            return iv.intersect(&Interval::point(self.r));
        }
        if self.m == 1 {
            return iv;
        }
        let mut out = iv;
        if iv.lo != i64::MIN {
            let up = modulo(self.r - modulo(iv.lo, self.m), self.m);
            if let Some(lo) = iv.lo.checked_add(up) {
                out.lo = lo;
            }
        }
        if iv.hi != i64::MAX {
            let down = modulo(modulo(iv.hi, self.m) - self.r, self.m);
            if let Some(hi) = iv.hi.checked_sub(down) {
                out.hi = hi;
            }
        }
        out
    }
}

/// The inverse of `a` modulo `n` (`a` and `n` coprime, `n >= 1`).
fn inverse(a: i128, n: i128) -> i128 {
    let (mut old_r, mut r) = (a.rem_euclid(n), n);
    let (mut old_s, mut s) = (1i128, 0i128);
    while r != 0 {
        let q = old_r / r;
        (old_r, r) = (r, old_r - q * r);
        (old_s, s) = (s, old_s - q * s);
    }
    old_s.rem_euclid(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every transfer function against enumeration: for members x of a and y of b (small
    /// windows), op(x, y) is a member of the result.
    #[test]
    fn transfer_functions_hold_on_members() {
        let classes: Vec<Congruence> = (0..=6)
            .flat_map(|m| (-2..=6).map(move |r| Congruence::new(m, r)))
            .collect();
        let members =
            |c: Congruence| -> Vec<i64> { (-30..=30).filter(|&v| c.contains(v)).collect() };
        for &a in &classes {
            for &b in &classes {
                for op in [
                    Op::Add,
                    Op::Mul,
                    Op::FloorDiv,
                    Op::CeilDiv,
                    Op::Mod,
                    Op::Min,
                    Op::Max,
                ] {
                    let out = Congruence::apply(op, a, b);
                    for &x in &members(a) {
                        for &y in &members(b) {
                            if op.is_div_like() && y <= 0 {
                                continue;
                            }
                            let Ok(v) = crate::expr::arith::apply(op, x, y) else {
                                continue;
                            };
                            assert!(
                                out.contains(v),
                                "{op:?} {a:?} {b:?}: {x}, {y} -> {v} not in {out:?}"
                            );
                        }
                    }
                }
                // intersect: exactly the common members
                let both = a.intersect(b);
                for v in -30..=30 {
                    let inb = a.contains(v) && b.contains(v);
                    match both {
                        Some(c) => assert_eq!(c.contains(v), inb, "{a:?} ∩ {b:?} at {v}"),
                        None => assert!(!inb, "{a:?} ∩ {b:?} said empty, {v} in both"),
                    }
                }
            }
        }
    }

    #[test]
    fn snap_moves_ends_to_members() {
        let c = Congruence::new(4, 3);
        assert_eq!(c.snap(Interval::new(1, 17)), Interval::new(3, 15));
        assert_eq!(c.snap(Interval::new(-5, -2)), Interval::new(-5, -5));
        assert!(c.snap(Interval::new(0, 2)).is_empty());
        assert_eq!(
            Congruence::exact(5).snap(Interval::new(0, 9)),
            Interval::point(5)
        );
        assert_eq!(c.snap(Interval::FULL), Interval::FULL);
        for m in 1..=7 {
            for r in 0..m {
                let c = Congruence::new(m, r);
                for lo in -10..=10 {
                    for hi in lo - 1..=lo + 12 {
                        let s = c.snap(Interval::new(lo, hi));
                        let want: Vec<i64> = (lo..=hi).filter(|&v| c.contains(v)).collect();
                        match want.as_slice() {
                            [] => assert!(s.is_empty(), "{c:?} [{lo}, {hi}] -> {s}"),
                            w => assert_eq!(s, Interval::new(w[0], *w.last().unwrap())),
                        }
                    }
                }
            }
        }
    }
}
