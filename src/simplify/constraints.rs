//! Constraint simplification (seed 000, "Indexing Map Simplifier"): each constraint
//! `e in [lo, hi]` is rewritten into an equivalent one on a simpler expression, then
//! compared with the interval `e` can take:
//!
//! ```text
//! d0 * 4 + s0 * 2 + 2 in [2, 11]   =>  d0 * 2 + s0 in [0, 4]      (shift, divide by gcd)
//! d0 floordiv 4 in [1, 2]          =>  d0 in [4, 11]              (into the bound of d0)
//! d0 + s0 in [0, 20]               =>  dropped, for d0 in [0, 5], s0 in [1, 3]
//! d0 - s0 in [10, 20]              =>  KNOWN EMPTY, for the same bounds
//! d0 mod 8 in [0, 0]               =>  d0 in [0, 8] as well, for d0 in [0, 9]
//! d0 + s0 in [0, 5]                =>  d0 in [0, 5] as well (a bound implied by the sum)
//! ```
//!
//! Every rewrite keeps the set of points of the domain exactly as it was.

use super::congruence::Congruence;
use super::{Step, StepLog};
use crate::expr::arith::{ceil_div, floor_div, floor_div_checked, modulo};
use crate::expr::{canonical, Expr, ExprKind, Linear, Op};
use crate::interval::{range_of, Interval};
use crate::map::{IndexingMap, Status};

/// One pass over the constraints of `m`; returns whether anything changed.
pub fn simplify_constraints(m: &mut IndexingMap, steps: &mut StepLog) -> bool {
    if m.status != Status::Defined {
        return false;
    }
    m.normalize_divisors();
    let mut changed = false;
    // (the variables' names only for the steps' text)
    let names = if steps.on() { m.names() } else { Vec::new() };
    let show = |e: Expr| crate::expr::display(e, &names).to_string();
    let mut kept = Vec::new();
    for &(e0, iv0) in &m.constraints.clone() {
        let (mut e, mut iv) = (e0, iv0);
        // Rewrite the constraint into one on a simpler expression, to a fixpoint.
        while let Some((e2, iv2, rule)) = rewrite_once(e, iv) {
            steps.push(|| Step {
                rule: rule.into(),
                before: format!("{} in {iv}", show(e)),
                after: format!("{} in {iv2}", show(e2)),
                why: String::new(),
            });
            (e, iv) = (e2, iv2);
            changed = true;
        }
        let r = range_of(e, &m.bounds());
        if iv.contains_interval(&r) {
            steps.push(|| Step {
                rule: "constraint-always-holds".into(),
                before: format!("{} in {iv}", show(e)),
                after: "(dropped)".into(),
                why: format!("{} is always in {r}", show(e)),
            });
            changed = true;
            continue;
        }
        if r.intersect(&iv).is_empty() || iv.is_empty() {
            steps.push(|| Step {
                rule: "constraint-never-holds".into(),
                before: format!("{} in {iv}", show(e)),
                after: "KNOWN EMPTY".into(),
                why: format!("{} is always in {r}, which misses {iv}", show(e)),
            });
            m.status = Status::KnownEmpty;
            return true;
        }
        let tight = iv.intersect(&r);
        if tight != iv {
            steps.push(|| Step {
                rule: "constraint-tighten".into(),
                before: format!("{} in {iv}", show(e)),
                after: format!("{} in {tight}", show(e)),
                why: format!("{} is always in {r}", show(e)),
            });
            iv = tight;
            changed = true;
        }
        kept.push((e, iv));
    }
    m.constraints = kept;
    match merge_mod_constraints(m, steps) {
        Some(true) => changed = true,
        Some(false) => {}
        None => {
            m.status = Status::KnownEmpty;
            return true;
        }
    }
    changed |= tighten_bounds(m, steps);
    m.canonicalize();
    changed
}

/// One rewrite of `e in iv` into an equivalent constraint, if one applies.
fn rewrite_once(e: Expr, iv: Interval) -> Option<(Expr, Interval, &'static str)> {
    let l = Linear::of(e)?;
    if l.terms.is_empty() {
        return None;
    }
    // e + k in [lo, hi]  <=>  e in [lo - k, hi - k]
    if l.constant != 0 {
        let iv2 = Interval::new(
            iv.lo.checked_sub(l.constant)?,
            iv.hi.checked_sub(l.constant)?,
        );
        let e2 = Linear {
            terms: l.terms.clone(),
            constant: 0,
        }
        .to_expr();
        return Some((e2, iv2, "constraint-shift-constant"));
    }
    // g·e in [lo, hi]  <=>  e in [ceil(lo / g), floor(hi / g)]     for g > 0
    let g = l
        .terms
        .iter()
        .fold(0i64, |g, &(_, k)| crate::simplify::rules::gcd(g, k));
    if g > 1 {
        let iv2 = Interval::new(ceil_div(iv.lo, g)?, floor_div(iv.hi, g));
        return Some((l.div_exact(g).to_expr(), iv2, "constraint-divide-gcd"));
    }
    // x floordiv c in [lo, hi]  <=>  x in [lo·c, hi·c + c - 1]     for c > 0
    // (k·s + j) mod c in [r, r]  <=>  s mod (c / g) in [r', r']      g = gcd(k, c), c > 0
    //   where r' = ((r - j) / g)·(k / g)⁻¹ mod (c / g); never when g does not divide r - j
    if let [(atom, 1)] = l.terms[..] {
        if let Some(out) = solve_mod(atom, iv) {
            return Some(out);
        }
        if let ExprKind::Bin(Op::FloorDiv, x, c) = atom.kind() {
            let c = c.as_const().filter(|&c| c > 0)?;
            let lo = iv.lo.checked_mul(c)?;
            let hi = iv.hi.checked_mul(c)?.checked_add(c - 1)?;
            return Some((canonical(x), Interval::new(lo, hi), "constraint-floordiv"));
        }
    }
    None
}

/// `(k·s + j) mod c in [r, r]` solved for `s mod c'` (`rewrite_once`), when that is a
/// different constraint.
fn solve_mod(atom: Expr, iv: Interval) -> Option<(Expr, Interval, &'static str)> {
    let ExprKind::Bin(Op::Mod, x, c) = atom.kind() else {
        return None;
    };
    let c = c.as_const().filter(|&c| c > 1)?;
    if !iv.is_point() || !(0..c).contains(&iv.lo) {
        return None;
    }
    let l = Linear::of(x)?;
    let [(s, k)] = l.terms[..] else {
        return None;
    };
    if k == 1 && l.constant == 0 {
        return None;
    }
    let g = crate::simplify::rules::gcd(k, c);
    let diff = iv.lo.checked_sub(l.constant)?;
    if diff % g != 0 {
        // k·s + j takes only values ≡ j (mod g), and r is not one of them
        return Some((atom, Interval::new(1, 0), "constraint-mod-solve"));
    }
    let c2 = c / g;
    // k / g is coprime to c2
    let r2 = (modulo(diff / g, c2) as i128 * inverse_mod(k / g, c2) as i128 % c2 as i128) as i64;
    let e2 = canonical(Expr::bin(Op::Mod, s, Expr::constant(c2)));
    if c2 == 1 {
        // every s: the constraint holds (r2 = 0 = s mod 1)
        return Some((
            Expr::constant(0),
            Interval::point(0),
            "constraint-mod-solve",
        ));
    }
    Some((e2, Interval::point(r2), "constraint-mod-solve"))
}

/// `a⁻¹ mod n` for `a` coprime to `n > 1` (extended Euclid).
fn inverse_mod(a: i64, n: i64) -> i64 {
    let (mut old_r, mut r) = (modulo(a, n) as i128, n as i128);
    let (mut old_s, mut s) = (1i128, 0i128);
    while r != 0 {
        let q = old_r / r;
        (old_r, r) = (r, old_r - q * r);
        (old_s, s) = (s, old_s - q * s);
    }
    old_s.rem_euclid(n as i128) as i64
}

/// `s mod a in [r, r]` and `s mod b in [q, q]` (the same `s`) become one constraint
/// `s mod lcm(a, b) in [r', r']` (Chinese remainder theorem). `None`: two of them share
/// no value, the map is empty; `Some(changed)` otherwise.
fn merge_mod_constraints(m: &mut IndexingMap, steps: &mut StepLog) -> Option<bool> {
    // (the variables' names only for the steps' text)
    let names = if steps.on() { m.names() } else { Vec::new() };
    let show = |e: Expr| crate::expr::display(e, &names).to_string();
    let mut changed = false;
    'again: loop {
        let cs = &m.constraints;
        for i in 0..cs.len() {
            let Some((x, a, r)) = point_mod(cs[i]) else {
                continue;
            };
            for j in i + 1..cs.len() {
                let Some((y, b, q)) = point_mod(cs[j]) else {
                    continue;
                };
                if x != y {
                    continue;
                }
                let (ci, cj) = (cs[i], cs[j]);
                let before = || format!("{} in {}, {} in {}", show(ci.0), ci.1, show(cj.0), cj.1);
                let Some(both) = Congruence::new(a, r).intersect(Congruence::new(b, q)) else {
                    steps.push(|| Step {
                        rule: "constraint-mod-merge".into(),
                        before: before(),
                        after: "KNOWN EMPTY".into(),
                        why: format!("no integer is {r} mod {a} and {q} mod {b}"),
                    });
                    return None;
                };
                let lcm = (a / crate::simplify::rules::gcd(a, b)).checked_mul(b);
                if Some(both.m) != lcm {
                    continue; // the lcm overflows: keep both
                }
                let e = canonical(Expr::bin(Op::Mod, x, Expr::constant(both.m)));
                let iv = Interval::point(both.r);
                steps.push(|| Step {
                    rule: "constraint-mod-merge".into(),
                    before: before(),
                    after: format!("{} in {iv}", show(e)),
                    why: String::new(),
                });
                m.constraints.remove(j);
                m.constraints[i] = (e, iv);
                changed = true;
                continue 'again;
            }
        }
        return Some(changed);
    }
}

/// `(s, c, r)` for a constraint `s mod c in [r, r]` (`c > 0`, `0 <= r < c`).
fn point_mod((e, iv): (Expr, Interval)) -> Option<(Expr, i64, i64)> {
    let ExprKind::Bin(Op::Mod, x, c) = e.kind() else {
        return None;
    };
    let c = c.as_const().filter(|&c| c > 0)?;
    (iv.is_point() && (0..c).contains(&iv.lo)).then_some((x, c, iv.lo))
}

/// Variable bounds implied by constraints: `v mod c in [a, b]` moves the bounds of `v` to
/// the nearest values that satisfy it; a linear constraint over variables bounds each of
/// them by what the others leave.
fn tighten_bounds(m: &mut IndexingMap, steps: &mut StepLog) -> bool {
    let mut changed = false;
    // (the variables' names only for the steps' text)
    let names = if steps.on() { m.names() } else { Vec::new() };
    for (e, iv) in m.constraints.clone() {
        let bounds = m.bounds();
        let mut narrowed: Vec<(usize, Interval, &str)> = Vec::new();
        if let ExprKind::Bin(Op::Mod, x, c) = e.kind() {
            if let (Some(v), Some(c)) = (x.as_var(), c.as_const().filter(|&c| c > 0)) {
                if let Some(b) = mod_bounds(bounds[v as usize], c, iv) {
                    narrowed.push((v as usize, b, "bounds-from-mod-constraint"));
                }
            }
        }
        if let Some(l) = Linear::of(e) {
            if l.terms.iter().all(|(a, _)| a.as_var().is_some()) {
                for (i, &(a, k)) in l.terms.iter().enumerate() {
                    let rest = l.terms.iter().enumerate().filter(|&(j, _)| j != i).fold(
                        Interval::point(l.constant),
                        |acc, (_, &(b, kb))| {
                            acc.add(&range_of(b, &bounds).mul(&Interval::point(kb)))
                        },
                    );
                    if rest.is_full() {
                        continue;
                    }
                    // k·v in [lo - rest.hi, hi - rest.lo]
                    let (Some(lo), Some(hi)) =
                        (iv.lo.checked_sub(rest.hi), iv.hi.checked_sub(rest.lo))
                    else {
                        continue;
                    };
                    // (k < 0: `lo / k` is past 64 bits for lo = -2^63, k = -1: v has no
                    // upper bound from this constraint then; a wrapped quotient, -2^63,
                    // called a non-empty map empty)
                    let b = if k > 0 {
                        ceil_div(lo, k).map(|l| Interval::new(l, floor_div(hi, k)))
                    } else {
                        let upper = floor_div_checked(lo, k).unwrap_or(i64::MAX);
                        ceil_div(hi, k).map(|l| Interval::new(l, upper))
                    };
                    if let Some(b) = b {
                        let v = a.as_var().expect("checked: every atom is a variable") as usize;
                        narrowed.push((v, b, "bounds-from-constraint"));
                    }
                }
            }
        }
        for (v, b, rule) in narrowed {
            let old = m.var(v).bounds;
            let new = old.intersect(&b);
            if new != old {
                steps.push(|| Step {
                    rule: rule.into(),
                    before: format!("{} in {old}", names[v]),
                    after: format!("{} in {new}", names[v]),
                    why: format!("{} in {iv}", crate::expr::display(e, &names)),
                });
                if let Some(var) = m.vars_mut().nth(v) {
                    var.bounds = new;
                }
                changed = true;
            }
        }
    }
    if m.vars().any(|v| v.bounds.is_empty()) {
        m.status = Status::KnownEmpty;
    }
    changed
}

/// The bounds of `v in b` narrowed to values with `v mod c in iv` (`None`: no narrowing).
fn mod_bounds(b: Interval, c: i64, iv: Interval) -> Option<Interval> {
    let iv = iv.intersect(&Interval::new(0, c - 1));
    if iv.is_empty() {
        return Some(Interval::new(1, 0));
    }
    if b.is_full() {
        return None;
    }
    let r = modulo(b.lo, c);
    // every step checked: the bounds may be near ±2^63
    let lo = if iv.contains(r) {
        b.lo
    } else if r < iv.lo {
        b.lo.checked_add(iv.lo.checked_sub(r)?)?
    } else {
        b.lo.checked_add(c.checked_sub(r)?.checked_add(iv.lo)?)?
    };
    let r = modulo(b.hi, c);
    let hi = if iv.contains(r) {
        b.hi
    } else if r > iv.hi {
        b.hi.checked_sub(r.checked_sub(iv.hi)?)?
    } else {
        b.hi.checked_sub(r.checked_add(c)?.checked_sub(iv.hi)?)?
    };
    Some(Interval::new(lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mod_bounds_move_to_matching_values() {
        let b = Interval::new(0, 9);
        assert_eq!(
            mod_bounds(b, 8, Interval::point(0)),
            Some(Interval::new(0, 8))
        );
        assert_eq!(
            mod_bounds(Interval::new(1, 10), 8, Interval::new(3, 5)),
            Some(Interval::new(3, 5))
        );
        assert_eq!(
            mod_bounds(Interval::new(6, 20), 8, Interval::new(3, 5)),
            Some(Interval::new(11, 20))
        );
        assert!(mod_bounds(b, 8, Interval::new(9, 12)).is_some_and(|i| i.is_empty()));
    }
}
