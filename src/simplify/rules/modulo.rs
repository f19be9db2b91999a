//! `mod` by a positive constant (MLIR semantics: the result is in `[0, c - 1]`).
//! Wildcards: ?a ?x any expression; ?c ?m constants (the conditions check that they are
//! constants and positive). A `mod` by anything else is never rewritten.

use super::floordiv::fold_inner_division;
use super::{build_view, num, positive, range, split_small_remainder, view, Compute, Rule};
use crate::expr::arith::{floor_div, modulo};
use crate::simplify::analysis::{EGraph, View};
use crate::simplify::language::IxLang;
use egg::{rewrite as rw, Id};

#[rustfmt::skip]
pub fn rules() -> Vec<Rule> { vec![
    // a mod 1 = 0
    rw!("mod-one";              "(mod ?a 1)"             => "0"),
    // a mod c = a - q·c     when c > 0 and every value of a lies in [q·c, q·c + c - 1]
    rw!("mod-in-range";         "(mod ?a ?c)"            => { Compute::new(&["?a", "?c"], in_range) }),
    // (Σ kᵢ·tᵢ + k) mod c = (Σ (kᵢ rem c)·tᵢ + k mod c) mod c     when c > 0
    //   (coefficients with |kᵢ| >= c reduced to the residue of least magnitude; multiples vanish)
    rw!("mod-drop-multiples";   "(mod ?a ?c)"            => { Compute::new(&["?a", "?c"], drop_multiples) }),
    // (g·A + B) mod c = (A mod (c / g))·g + B     when g divides c and 0 <= B <= g - 1
    rw!("mod-small-remainder";  "(mod ?a ?c)"            => { Compute::new(&["?a", "?c"], small_remainder) }),
    // (x mod m) mod c = x mod c     when c > 0 divides m
    rw!("mod-nested";           "(mod (mod ?x ?m) ?c)"   => { Compute::new(&["?x", "?m", "?c"], nested) }),
    // (A + B floordiv c) mod d = ((c·A + B) mod (c·d)) floordiv c     when c, d > 0
    //   (B floordiv c any summand with coefficient 1, alone or in a sum)
    rw!("mod-nested-sum";       "(mod ?a ?d)"            => { Compute::new(&["?a", "?d"], nested_sum) }),
    // (k·(x mod m) + R) mod c = (k·x + R) mod c     when c, m > 0 and c divides k·m
    //   (k·(x mod m) = k·x - k·m·(x floordiv m), a multiple of c apart)
    rw!("mod-inner-mod";        "(mod ?a ?c)"            => { Compute::new(&["?a", "?c"], inner_mod) }),
    // (k·t + R) mod c = (k·r + R) mod c     when c > 0, t ∈ m·ℤ + r (congruence.rs) and c
    //   divides k·m (k·t and k·r differ by a multiple of c)
    rw!("mod-congruent-term";   "(mod ?a ?c)"            => { Compute::new(&["?a", "?c"], congruent_term) }),
]}

fn inner_mod(egraph: &mut EGraph, ac: &[Id]) -> Option<Id> {
    let c = positive(egraph, ac[1])?;
    let v = view(egraph, ac[0])?;
    for &(t, k) in &v.terms {
        let inner = egraph[t].nodes.iter().find_map(|n| match *n {
            IxLang::Mod([x, mid]) => positive(egraph, mid)
                .filter(|&m| k.checked_mul(m).is_some_and(|km| km % c == 0))
                .map(|_| x),
            _ => None,
        });
        let Some(x) = inner else { continue };
        let out = v
            .add(&View {
                terms: vec![(t, k.checked_neg()?)],
                constant: 0,
            })?
            .add(&view(egraph, x)?.scale(k)?)?;
        let a = build_view(egraph, &out);
        return Some(egraph.add(IxLang::Mod([a, ac[1]])));
    }
    None
}

fn congruent_term(egraph: &mut EGraph, ac: &[Id]) -> Option<Id> {
    let c = positive(egraph, ac[1])?;
    let v = view(egraph, ac[0])?;
    let mut out = View::constant(v.constant);
    let mut changed = false;
    for &(t, k) in &v.terms {
        let g = egraph[t].data.cong;
        let multiple = g.m > 1 && k % c != 0 && k.checked_mul(g.m).is_some_and(|km| km % c == 0);
        if multiple {
            out.constant = out.constant.checked_add(modulo(k.checked_mul(g.r)?, c))?;
            changed = true;
        } else {
            out.terms.push((t, k));
        }
    }
    if !changed {
        return None;
    }
    let a = build_view(egraph, &out);
    Some(egraph.add(IxLang::Mod([a, ac[1]])))
}

fn in_range(egraph: &mut EGraph, ac: &[Id]) -> Option<Id> {
    let c = positive(egraph, ac[1])?;
    let r = range(egraph, ac[0]);
    if r.is_empty() || r.is_full() {
        return None;
    }
    let q = floor_div(r.lo, c);
    if floor_div(r.hi, c) != q {
        return None;
    }
    if q == 0 {
        return Some(ac[0]);
    }
    let shift = num(egraph, q.checked_mul(c)?.checked_neg()?);
    Some(egraph.add(IxLang::Add([ac[0], shift])))
}

/// `k` itself when `|k| < c`, else the residue of `k` modulo `c` of least magnitude; on a
/// tie the positive one (`-1` modulo 2 is `1`: one operator fewer, and `-x mod 2` and
/// `x mod 2` no longer tie in cost with the floordiv form they came from). And `1` for
/// any `k` that is `1` modulo `c`, small or not: `(d0 * -3) mod 4` is `d0 mod 4`, a
/// product fewer (isl's form; the only residue that removes an operator).
/// The one function of the rule, the pre-pass (`fold.rs`) and the proof of done
/// (`done.rs`).
pub fn least_residue(k: i64, c: i64) -> i64 {
    let tie = c % 2 == 0 && k == -(c / 2);
    if k > -c && k < c && !tie && (c == 1 || modulo(k, c) != 1) {
        return k; // already small: keep the coefficient as written
    }
    let r = modulo(k, c);
    if r > c / 2 && r != 1 {
        r - c
    } else {
        r
    }
}

fn drop_multiples(egraph: &mut EGraph, ac: &[Id]) -> Option<Id> {
    let c = positive(egraph, ac[1])?;
    let v = view(egraph, ac[0])?;
    let mut out = View::constant(modulo(v.constant, c));
    for &(id, k) in &v.terms {
        let r = least_residue(k, c);
        if r != 0 {
            out.terms.push((id, r));
        }
    }
    if out == v {
        return None;
    }
    let a = build_view(egraph, &out);
    Some(egraph.add(IxLang::Mod([a, ac[1]])))
}

fn small_remainder(egraph: &mut EGraph, ac: &[Id]) -> Option<Id> {
    let c = positive(egraph, ac[1])?;
    let v = view(egraph, ac[0])?;
    let (g, a, b) = split_small_remainder(egraph, &v, c)?;
    if b.terms.is_empty() && b.constant == 0 && g == 1 {
        return None;
    }
    let a_id = build_view(egraph, &a);
    let cg = num(egraph, c / g);
    let m = egraph.add(IxLang::Mod([a_id, cg]));
    let out = View::atom(m).scale(g)?.add(&b)?;
    Some(build_view(egraph, &out))
}

fn nested(egraph: &mut EGraph, xmc: &[Id]) -> Option<Id> {
    let m = positive(egraph, xmc[1])?;
    let c = positive(egraph, xmc[2])?;
    if m % c != 0 {
        return None;
    }
    Some(egraph.add(IxLang::Mod([xmc[0], xmc[2]])))
}

fn nested_sum(egraph: &mut EGraph, ad: &[Id]) -> Option<Id> {
    let d = positive(egraph, ad[1])?;
    let v = view(egraph, ad[0])?;
    let (sum, c) = fold_inner_division(egraph, &v)?;
    let cd = num(egraph, c.checked_mul(d)?);
    let m = egraph.add(IxLang::Mod([sum, cd]));
    let cid = num(egraph, c);
    Some(egraph.add(IxLang::FloorDiv([m, cid])))
}
