//! The first tier's proof of done: a cheap, deterministic check that no rule of the
//! e-graph (`rules/*.rs`) can make an expression cheaper, so the expression skips the
//! e-graph. [`open`] returns the first clause that fails ([`Open`]), or `None` when every
//! clause holds.
//!
//! ```text
//! d0, d1 in [0, 9]:  d0 * 2 + (d1 * 4 + d0) floordiv 8          done
//!                    (d1 * 8 + d0) floordiv 8                    Multiple (split-multiples)
//!                    ((d1 * 4 + d0) floordiv 8) mod 3            Nested
//!                    (d1 * 4 + d0) floordiv 64                   OneWindow (interval-constant)
//! ```
//!
//! The shape the check accepts, an *atomic* expression: a linear combination
//! `Σ kᵢ·tᵢ + k` whose atoms `tᵢ` are variables (not fixed to one point) and divisions
//! `L floordiv c`, `L mod c` with `c > 1` a constant and `L = Σ aⱼ·vⱼ + a` linear over
//! distinct variables. On that shape the rules can only fire as follows, and each clause
//! rules one family out:
//!
//! - the analysis (`interval-constant`, `mod-in-range`): the interval of `L` over the
//!   box is exact (each variable appears once, so interval addition is exact), and every
//!   member of `L`'s class is a linear form over the same variables with that interval;
//!   only a constraint fact on `L` or on part of it narrows it ([`Settle`] applies them).
//!   `L op c` is a constant, or `L mod c` is `L - q·c`, exactly when that interval lies
//!   in one window `[q·c, q·c + c - 1]` — clause [`Open::OneWindow`]. Otherwise `L op c`
//!   takes two values or more (for `mod`: some `aⱼ` is not a multiple of `c`, by
//!   [`Open::Residue`], so a step of `vⱼ` changes the residue), its interval's snapped
//!   ends are two values of its class, and so no sum of such atoms has a one-point
//!   interval either;
//! - `floordiv-split-multiples` moves a multiple of `c` out of `L`: clause
//!   [`Open::Multiple`] (a coefficient divisible by `c`, or a constant outside `[0, c)`);
//! - `mod-drop-multiples` rewrites a coefficient or the constant that is not its own least
//!   residue: clause [`Open::Residue`];
//! - `floordiv-small-remainder` and `mod-small-remainder`: their split, tried exactly as
//!   [`super::rules::split_small_remainder`] tries it, on the exact intervals of the
//!   variables — clause [`Open::SmallRemainder`] (this also covers the gcd scalings,
//!   whose remainder is the constant alone);
//! - `mod-congruent-term` needs a term with a congruence modulus above 1: the terms of `L`
//!   are variables, whose congruence is `1ℤ + 0` (nothing narrows it);
//! - the rules on nested divisions (`floordiv-nested`, `floordiv-of-mod`,
//!   `floordiv-nested-sum`, `mod-nested`, `mod-nested-sum`, `mod-inner-mod`,
//!   `linearize-cancel-mod`) need a division inside a dividend: clause [`Open::Nested`];
//! - `add-floordiv-to-mod` (and the companion `x mod c` that `linearize-cancel` adds) needs
//!   a summand `q·(L floordiv c)` with `c` dividing `q`: clause [`Open::FloordivToMod`];
//! - `linearize-cancel` needs `L mod c` and `L floordiv c` in one sum: clause
//!   [`Open::Pair`] (any two divisions of one dividend in one expression);
//! - `floordiv-split-window` moves the nearest multiples of `c` out of `L` and finds the
//!   rest in one window: clause [`Open::Window`] (tried as the rule tries it, on the
//!   bounds);
//! - `floordiv-two-values` and `mod-two-values` make a division affine in a variable of
//!   two values: clause [`Open::TwoValues`] (a dividend over one variable whose bounds
//!   hold two values);
//! - `ceildiv-to-floordiv` may reach a cheaper floordiv ([`Open::CeilDiv`]); the min/max
//!   rules decide by ranges ([`Open::MinMax`]); a variable fixed to a point is a constant
//!   ([`Open::PointVar`]); a product of two non-constants, a divisor that is not a constant
//!   above 1, or an overflow is not the shape ([`Open::Shape`]);
//! - the sum and product rules that remain (`add-collect`, `mul-distribute`, `add-zero`,
//!   `mul-one`, `mul-zero`, `floordiv-one`, `mod-one`) only rebuild the same linear
//!   combination over the same atoms: nothing ranked lower.
//!
//! The facts (the map's constraints, for the results) go into the e-graph too, and rules
//! fire on their own nodes: a fact that is not linear over variables leaves every
//! expression open ([`Open::Fact`]), as do two facts on parts of one dividend (their
//! combined narrowing is not modelled).
//!
//! Soundness does not depend on this check (skipping the e-graph never changes what an
//! expression means); the tests below check each clause, and `tests/props.rs` checks on
//! random maps that the e-graph never finds a form ranked lower than an expression this
//! check calls done.

use super::rules::modulo::least_residue;
use super::rules::remainder_factors;
use crate::expr::arith::{floor_div, modulo};
use crate::expr::linear::Linear;
use crate::expr::{Expr, ExprKind, Op};
use crate::interval::Interval;

/// The first clause of the proof of done that an expression fails.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Open {
    /// A min or max (`min-decided`, `max-decided`).
    MinMax,
    /// A variable whose bounds are one point (`interval-constant`).
    PointVar,
    /// A ceildiv (`ceildiv-to-floordiv`).
    CeilDiv,
    /// Not the atomic shape: a product of non-constants, a divisor that is not a constant
    /// above 1, an empty bound, or an overflow.
    Shape,
    /// A division or modulo inside a dividend (the nested rules).
    Nested,
    /// A dividend whose interval lies in one window of the divisor (`interval-constant`,
    /// `mod-in-range`).
    OneWindow,
    /// A floordiv whose dividend has a term or constant that `floordiv-split-multiples`
    /// moves out.
    Multiple,
    /// A mod whose dividend has a coefficient or constant that `mod-drop-multiples`
    /// reduces.
    Residue,
    /// A floordiv whose dividend, split at the nearest multiples of the divisor, leaves a
    /// remainder in one window (`floordiv-split-window`).
    Window,
    /// A dividend over one variable that takes two values (`floordiv-two-values`,
    /// `mod-two-values`).
    TwoValues,
    /// A dividend that `floordiv-small-remainder` or `mod-small-remainder` splits.
    SmallRemainder,
    /// A summand `q·(L floordiv c)` with `c` dividing `q` (`add-floordiv-to-mod`).
    FloordivToMod,
    /// Two divisions of the same dividend in one expression (`linearize-cancel`).
    Pair,
    /// A constraint fact that is not linear over variables, or two facts on parts of one
    /// dividend.
    Fact,
}

/// What the check reads: the variable bounds (narrowed by facts on bare variables) and
/// the linear facts.
pub struct Settle {
    bounds: Vec<Interval>,
    /// Facts `F in iv`, `F` linear over variables (at least two terms, or one scaled).
    facts: Vec<(Linear, Interval)>,
    /// A fact that is not linear over variables: every expression is open.
    opaque: bool,
}

/// The variables of `l` as indices, when every atom is a variable.
fn var_terms(l: &Linear) -> Option<Vec<(u32, i64)>> {
    l.terms
        .iter()
        .map(|&(t, k)| t.as_var().map(|v| (v, k)))
        .collect()
}

impl Settle {
    /// The check under `bounds` and the constraint `facts` (`e in iv`), as the e-graph
    /// receives them (`rewrite::rewrite_exprs`).
    pub fn new(bounds: &[Interval], facts: &[(Expr, Interval)]) -> Settle {
        let mut s = Settle {
            bounds: bounds.to_vec(),
            facts: Vec::new(),
            opaque: false,
        };
        for &(e, iv) in facts {
            if let Some(v) = e.as_var() {
                // a fact on a variable narrows the variable's own class
                if let Some(b) = s.bounds.get_mut(v as usize) {
                    *b = b.intersect(&iv);
                }
                continue;
            }
            match Linear::of(e).filter(|l| var_terms(l).is_some()) {
                Some(l) if l.terms.len() == 1 => {
                    // `k·v + c in iv`: v's own bounds narrowed as far as the fact allows
                    // (further than the e-graph narrows: only ever more clauses open)
                    let (t, k) = l.terms[0];
                    let v = t.as_var().unwrap_or(0) as usize;
                    let (lo, hi) = (
                        iv.lo as i128 - l.constant as i128,
                        iv.hi as i128 - l.constant as i128,
                    );
                    let (lo, hi) = if k > 0 { (lo, hi) } else { (-hi, -lo) };
                    let k = (k as i128).abs();
                    let (lo, hi) = (
                        lo.div_euclid(k) + i128::from(lo.rem_euclid(k) != 0),
                        hi.div_euclid(k),
                    );
                    let clamp = |x: i128| x.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
                    if let Some(b) = s.bounds.get_mut(v) {
                        *b = b.intersect(&Interval::new(clamp(lo), clamp(hi)));
                    }
                }
                Some(l) if !l.terms.is_empty() => s.facts.push((l, iv)),
                Some(_) => {} // a constant: nothing to narrow
                None => s.opaque = true,
            }
        }
        // A fact that pins a linear form to one value makes its class a constant
        // (`constraint-fact`), wherever that form is a part of a sum: not modelled.
        let pinned = s.facts.iter().any(|(f, iv)| {
            let terms = var_terms(f).unwrap_or_default();
            let r = s.linear_range(f.constant, &terms, &|_| false);
            let g = terms
                .iter()
                .fold(0i64, |g, &(_, k)| super::rules::gcd(g, k));
            let clamp = |x: i128| x.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
            let r = Interval::new(clamp(r.0.max(iv.lo as i128)), clamp(r.1.min(iv.hi as i128)));
            let r = super::congruence::Congruence::new(g, f.constant).snap(r);
            r.is_empty() || r.is_point()
        });
        // (a variable pinned by a fact is that constant, in any expression: the class of
        // the constant then holds the variable, a form of no weight)
        let pinned_var = s
            .bounds
            .iter()
            .zip(bounds)
            .any(|(b, was)| b != was && (b.is_point() || b.is_empty()));
        s.opaque |= pinned || pinned_var;
        s
    }

    /// The exact interval of `Σ k·v + constant` over the bounds, the variables `skip`
    /// leaves out omitted, in 128 bits.
    fn linear_range(
        &self,
        constant: i64,
        terms: &[(u32, i64)],
        skip: &dyn Fn(u32) -> bool,
    ) -> (i128, i128) {
        let (mut lo, mut hi) = (constant as i128, constant as i128);
        for &(v, k) in terms {
            if skip(v) {
                continue;
            }
            let b = self.bound(v);
            let (x, y) = (k as i128 * b.lo as i128, k as i128 * b.hi as i128);
            lo += x.min(y);
            hi += x.max(y);
        }
        (lo, hi)
    }

    /// Whether every expression of `exprs` is done.
    pub fn all_done(&self, exprs: &[Expr]) -> bool {
        exprs.iter().all(|&e| self.open(e).is_none())
    }

    /// The first clause `e` fails, or `None` when no rule of the e-graph can make it
    /// cheaper.
    pub fn open(&self, e: Expr) -> Option<Open> {
        if self.opaque {
            return Some(Open::Fact);
        }
        let Some(top) = Linear::of(e) else {
            return Some(Open::Shape);
        };
        let mut dividends: Vec<Expr> = Vec::new();
        for &(t, q) in &top.terms {
            match t.kind() {
                ExprKind::Const(_) => {}
                ExprKind::Var(v) => {
                    let b = self.bound(v);
                    if b.is_empty() {
                        return Some(Open::Shape);
                    }
                    if b.is_point() {
                        return Some(Open::PointVar);
                    }
                }
                ExprKind::Bin(op, a, d) => {
                    match op {
                        Op::Min | Op::Max => return Some(Open::MinMax),
                        Op::CeilDiv => return Some(Open::CeilDiv),
                        Op::Add | Op::Mul => return Some(Open::Shape),
                        Op::FloorDiv | Op::Mod => {}
                    }
                    if let Some(why) = self.division(op, a, d) {
                        return Some(why);
                    }
                    let c = d.as_const().unwrap_or(1);
                    if op == Op::FloorDiv && q % c == 0 {
                        return Some(Open::FloordivToMod);
                    }
                    if dividends.contains(&a) {
                        return Some(Open::Pair);
                    }
                    dividends.push(a);
                }
            }
        }
        None
    }

    fn bound(&self, v: u32) -> Interval {
        self.bounds
            .get(v as usize)
            .copied()
            .unwrap_or(Interval::FULL)
    }

    /// The clauses on one division `a op d` (`op` floordiv or mod).
    fn division(&self, op: Op, a: Expr, d: Expr) -> Option<Open> {
        let Some(c) = d.as_const().filter(|&c| c > 1) else {
            return Some(if d.has_div() || d.has_min_max() {
                Open::Nested
            } else {
                Open::Shape
            });
        };
        if a.has_div() || a.has_min_max() {
            return Some(Open::Nested);
        }
        let Some(l) = Linear::of(a) else {
            return Some(Open::Shape);
        };
        let Some(terms) = var_terms(&l) else {
            return Some(Open::Shape);
        };
        let mut vars = Vec::with_capacity(terms.len());
        for &(v, _) in &terms {
            let b = self.bound(v);
            if b.is_empty() {
                return Some(Open::Shape);
            }
            if b.is_point() {
                return Some(Open::PointVar);
            }
            vars.push(b);
        }
        // floordiv-two-values / mod-two-values
        if let [b] = vars[..] {
            if b.hi.checked_sub(b.lo) == Some(1) {
                return Some(Open::TwoValues);
            }
        }
        // mod-drop-multiples / floordiv-split-multiples
        match op {
            Op::Mod => {
                let reduced = modulo(l.constant, c) != l.constant
                    || terms.iter().any(|&(_, k)| least_residue(k, c) != k);
                if reduced {
                    return Some(Open::Residue);
                }
            }
            _ => {
                let moved = floor_div(l.constant, c) != 0 || terms.iter().any(|&(_, k)| k % c == 0);
                if moved {
                    return Some(Open::Multiple);
                }
            }
        }
        // interval-constant / mod-in-range
        let Some(r) = self.dividend_range(&l, &terms) else {
            return Some(Open::Fact);
        };
        if r.is_empty() || floor_div(r.lo, c) == floor_div(r.hi, c) {
            return Some(Open::OneWindow);
        }
        // floordiv-split-window (on the variables' bounds, at least as narrow as the
        // e-graph's: a split that fails here fails there)
        if op == Op::FloorDiv {
            let ranges: Vec<(Interval, i64)> = vars
                .iter()
                .zip(&terms)
                .map(|(&b, &(_, k))| (b, k))
                .collect();
            if super::rules::window_split(&ranges, l.constant, c).is_some() {
                return Some(Open::Window);
            }
        }
        // floordiv-small-remainder / mod-small-remainder (the split of
        // `rules::split_small_remainder`, on the exact intervals of the variables)
        for g in remainder_factors(terms.iter().map(|&(_, k)| k), c) {
            let mut lo = modulo(l.constant, g) as i128;
            let mut hi = lo;
            for (&(_, k), b) in terms.iter().zip(&vars) {
                if k % g != 0 {
                    let (x, y) = (k as i128 * b.lo as i128, k as i128 * b.hi as i128);
                    lo += x.min(y);
                    hi += x.max(y);
                }
            }
            if lo >= 0 && hi <= (g - 1) as i128 {
                return Some(Open::SmallRemainder);
            }
        }
        None
    }

    /// The interval of the linear dividend `l` (variables `terms`): exact over the box,
    /// narrowed by a fact on `l` or on part of it (a fact `F` whose terms are those of `l`
    /// scaled by one factor `s`: `l = s·F + R`), then snapped to `l`'s congruence class.
    /// `None` when two facts bear on `l` (not modelled: open).
    fn dividend_range(&self, l: &Linear, terms: &[(u32, i64)]) -> Option<Interval> {
        let (mut lo, mut hi) = self.linear_range(l.constant, terms, &|_| false);
        let mut used = false;
        for (f, iv) in &self.facts {
            let Some(fterms) = var_terms(f) else { continue };
            let Some(s) = scale_of(&fterms, terms) else {
                continue;
            };
            if used {
                return None;
            }
            used = true;
            // l = s·F + (l - s·F): the rest has the other terms and constant
            let fr = self.linear_range(f.constant, &fterms, &|_| false);
            let fr = (fr.0.max(iv.lo as i128), fr.1.min(iv.hi as i128));
            // the rest, l - s·F: the other terms, and the constant left over
            let rest_const = l.constant as i128 - s as i128 * f.constant as i128;
            let (rlo, rhi) = self.linear_range(0, terms, &|v| fterms.iter().any(|&(u, _)| u == v));
            let (rlo, rhi) = (rlo + rest_const, rhi + rest_const);
            let (x, y) = (s as i128 * fr.0, s as i128 * fr.1);
            lo = lo.max(x.min(y) + rlo);
            hi = hi.min(x.max(y) + rhi);
        }
        let clamp = |x: i128| x.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
        let g = terms
            .iter()
            .fold(0i64, |g, &(_, k)| super::rules::gcd(g, k));
        let iv = Interval::new(clamp(lo), clamp(hi));
        if lo > hi {
            return Some(iv);
        }
        Some(super::congruence::Congruence::new(g, l.constant).snap(iv))
    }
}

/// `s` when every term of `f` is a term of `l` with `s` times its coefficient.
fn scale_of(f: &[(u32, i64)], l: &[(u32, i64)]) -> Option<i64> {
    let mut s = None;
    for &(v, k) in f {
        let &(_, kl) = l.iter().find(|&&(u, _)| u == v)?;
        if kl % k != 0 {
            return None;
        }
        let r = kl / k;
        if *s.get_or_insert(r) != r {
            return None;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::canonical;

    fn v(i: u32) -> Expr {
        Expr::var(i)
    }
    fn k(c: i64) -> Expr {
        Expr::constant(c)
    }
    fn fd(a: Expr, c: i64) -> Expr {
        Expr::bin(Op::FloorDiv, a, k(c))
    }
    fn md(a: Expr, c: i64) -> Expr {
        Expr::bin(Op::Mod, a, k(c))
    }
    /// d0, d1, d2 in [0, 9]
    fn box3() -> Vec<Interval> {
        vec![Interval::new(0, 9); 3]
    }
    fn open(e: Expr) -> Option<Open> {
        Settle::new(&box3(), &[]).open(canonical(e))
    }
    /// `a·d1 + b·d0 + c`
    fn lin(a: i64, b: i64, c: i64) -> Expr {
        v(1).mul(k(a)).add(v(0).mul(k(b))).add(k(c))
    }

    #[test]
    fn done_expressions() {
        assert_eq!(open(v(0).mul(k(3)).add(v(1))), None);
        assert_eq!(open(v(0).mul(k(2)).add(fd(lin(4, 1, 0), 8))), None);
        assert_eq!(open(md(lin(4, 1, 0), 8)), None);
        assert_eq!(open(md(lin(4, 1, 0), 8).add(fd(lin(3, 1, 0), 8))), None);
        // a negative coefficient that is its own least residue
        assert_eq!(open(md(v(0).sub(v(1)), 8)), None);
    }

    #[test]
    fn clause_min_max() {
        assert_eq!(open(Expr::bin(Op::Min, v(0), v(1))), Some(Open::MinMax));
    }

    #[test]
    fn clause_point_var() {
        let mut b = box3();
        b[2] = Interval::point(4);
        let s = Settle::new(&b, &[]);
        assert_eq!(s.open(v(2).add(v(0))), Some(Open::PointVar));
        assert_eq!(
            s.open(canonical(fd(lin(4, 1, 0).add(v(2)), 8))),
            Some(Open::PointVar)
        );
    }

    #[test]
    fn clause_window() {
        let mut b = box3();
        b[0] = Interval::new(1, 5);
        let s = Settle::new(&b, &[]);
        // d0 * 9 floordiv 5 = d0 * 2 + (-d0) floordiv 5 = d0 * 2 - 1 on [1, 5]
        assert_eq!(s.open(canonical(fd(v(0).mul(k(9)), 5))), Some(Open::Window));
        // on [0, 9] no choice of the nearest multiples leaves one window
        assert_eq!(open(fd(v(0).mul(k(9)), 5)), None);
    }

    #[test]
    fn clause_two_values() {
        let mut b = box3();
        b[2] = Interval::new(-7, -6);
        let s = Settle::new(&b, &[]);
        assert_eq!(s.open(md(v(2), 2)), Some(Open::TwoValues));
        assert_eq!(
            s.open(canonical(fd(v(2).mul(k(3)), 2))),
            Some(Open::TwoValues)
        );
        // two variables: not the rule's shape
        assert_eq!(s.open(md(v(2).add(v(0)), 8)), None);
    }

    #[test]
    fn clause_ceildiv() {
        assert_eq!(
            open(Expr::bin(Op::CeilDiv, lin(4, 1, 0), k(8))),
            Some(Open::CeilDiv)
        );
    }

    #[test]
    fn clause_shape() {
        assert_eq!(open(v(0).mul(v(1))), Some(Open::Shape));
        assert_eq!(open(Expr::bin(Op::FloorDiv, v(0), v(1))), Some(Open::Shape));
        let mut b = box3();
        b[0] = Interval::new(3, 2);
        assert_eq!(Settle::new(&b, &[]).open(v(0)), Some(Open::Shape));
    }

    #[test]
    fn clause_nested() {
        assert_eq!(open(md(fd(lin(4, 1, 0), 8), 3)), Some(Open::Nested));
        assert_eq!(open(fd(v(0).add(md(v(1), 4)), 8)), Some(Open::Nested));
    }

    #[test]
    fn clause_one_window() {
        // 4·d1 + d0 in [0, 45] lies in [0, 63]
        assert_eq!(open(fd(lin(4, 1, 0), 64)), Some(Open::OneWindow));
        assert_eq!(open(md(lin(4, 1, 0), 64)), Some(Open::OneWindow));
        // the same through a constraint fact on the dividend: 4·d1 + d0 in [0, 7]
        let fact = [(canonical(lin(4, 1, 0)), Interval::new(0, 7))];
        let s = Settle::new(&box3(), &fact);
        assert_eq!(
            s.open(canonical(fd(lin(4, 1, 0), 8))),
            Some(Open::OneWindow)
        );
        // and on a part of it, scaled: 8·d1 + 2·d0 + d2 with 4·d1 + d0 in [0, 1]
        let e = canonical(fd(lin(8, 2, 0).add(v(2)), 16));
        assert_eq!(Settle::new(&box3(), &[]).open(e), None);
        let fact = [(canonical(lin(4, 1, 0)), Interval::new(0, 1))];
        assert_eq!(Settle::new(&box3(), &fact).open(e), Some(Open::OneWindow));
        // a fact on a bare variable narrows the variable
        let fact = [(v(1), Interval::new(0, 1))];
        assert_eq!(
            Settle::new(&box3(), &fact).open(canonical(fd(lin(4, 1, 0), 16))),
            Some(Open::OneWindow)
        );
    }

    #[test]
    fn clause_multiple() {
        assert_eq!(open(fd(lin(8, 1, 0), 8)), Some(Open::Multiple));
        assert_eq!(open(fd(lin(4, 1, 9), 8)), Some(Open::Multiple));
        assert_eq!(open(fd(lin(4, 1, -1), 8)), Some(Open::Multiple));
        assert_eq!(open(fd(lin(4, 1, 7), 8)), None);
    }

    #[test]
    fn clause_residue() {
        assert_eq!(open(md(lin(9, 1, 0), 8)), Some(Open::Residue));
        assert_eq!(open(md(lin(-4, 1, 0), 8)), Some(Open::Residue));
        assert_eq!(open(md(lin(4, 1, 8), 8)), Some(Open::Residue));
        assert_eq!(open(md(lin(4, 1, 7), 8)), None);
    }

    #[test]
    fn clause_small_remainder() {
        // (4·d1 + d0) with d0 in [0, 3]: (4·d1 + d0) fd 8 = d1 fd 2
        let mut b = box3();
        b[0] = Interval::new(0, 3);
        let s = Settle::new(&b, &[]);
        assert_eq!(
            s.open(canonical(fd(lin(4, 1, 0), 8))),
            Some(Open::SmallRemainder)
        );
        assert_eq!(
            s.open(canonical(md(lin(4, 1, 0), 8))),
            Some(Open::SmallRemainder)
        );
        // the gcd scaling: (6·d1 + 4·d0) fd 10 = (3·d1 + 2·d0) fd 5
        assert_eq!(open(fd(lin(6, 4, 0), 10)), Some(Open::SmallRemainder));
    }

    #[test]
    fn clause_floordiv_to_mod() {
        // d0 + d1·4 - 8·((4·d1 + d0) fd 8) = (4·d1 + d0) mod 8 + ...
        let e = lin(4, 1, 0).sub(fd(lin(4, 1, 0), 8).mul(k(8)));
        assert_eq!(open(e), Some(Open::FloordivToMod));
    }

    #[test]
    fn clause_pair() {
        let e = fd(lin(4, 1, 0), 8).mul(k(3)).add(md(lin(4, 1, 0), 8));
        assert_eq!(open(e), Some(Open::Pair));
    }

    #[test]
    fn clause_fact() {
        let fact = [(md(v(0), 2), Interval::point(0))];
        assert_eq!(Settle::new(&box3(), &fact).open(v(0)), Some(Open::Fact));
        // two facts on parts of one dividend
        let facts = [
            (canonical(v(0).add(v(1))), Interval::new(0, 9)),
            (canonical(v(2).add(v(3))), Interval::new(0, 9)),
        ];
        let e = canonical(fd(lin(1, 1, 0).add(v(2)).add(v(3)), 8));
        let b4 = vec![Interval::new(0, 9); 4];
        assert_eq!(Settle::new(&b4, &facts[..1]).open(e), None);
        assert_eq!(Settle::new(&b4, &facts).open(e), Some(Open::Fact));
        // a fact that pins a linear form, or a variable, to one value
        let e = canonical(fd(lin(4, 1, 0), 8));
        let fact = [(canonical(v(0).add(v(2))), Interval::new(-3, 0))];
        assert_eq!(Settle::new(&box3(), &fact).open(e), Some(Open::Fact));
        let fact = [(canonical(v(2).mul(k(3)).add(k(1))), Interval::new(5, 7))];
        assert_eq!(Settle::new(&box3(), &fact).open(e), Some(Open::Fact));
        // a fact on a scaled variable narrows it: 3·d1 + 1 in [0, 12] is d1 in [0, 3]
        let fact = [(canonical(v(1).mul(k(3)).add(k(1))), Interval::new(0, 12))];
        let s = Settle::new(&box3(), &fact);
        assert_eq!(
            s.open(canonical(fd(lin(4, 1, 0), 64))),
            Some(Open::OneWindow)
        );
        assert_eq!(s.open(canonical(fd(lin(4, 1, 0), 16))), None);
    }
}
