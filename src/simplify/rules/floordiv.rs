//! `floordiv` by a positive constant. Wildcards: ?a ?x any expression; ?c ?k ?m constants
//! (the conditions check that they are constants and positive). A division by anything
//! else is never rewritten.
//!
//! A division whose dividend lies within one multiple of the divisor (`d1 floordiv 16`
//! for `d1 in [0, 14]`) becomes a constant through the analysis (`interval-constant`).

use super::{build_view, num, positive, split_small_remainder, view, Compute, Rule};
use crate::expr::arith::{floor_div, modulo};
use crate::simplify::analysis::{EGraph, View};
use crate::simplify::language::IxLang;
use egg::{rewrite as rw, Id};

#[rustfmt::skip]
pub fn rules() -> Vec<Rule> { vec![
    // a floordiv 1 = a
    rw!("floordiv-one";             "(floordiv ?a 1)"                 => "?a"),
    // (c·A + B + k) floordiv c = A + k floordiv c + (B + k mod c) floordiv c     when c > 0
    //   (A: the terms whose coefficient c divides; B: the others)
    rw!("floordiv-split-multiples"; "(floordiv ?a ?c)"                => { Compute::new(&["?a", "?c"], split_multiples) }),
    // (g·A + B) floordiv c = A floordiv (c / g)     when g divides c and 0 <= B <= g - 1
    rw!("floordiv-small-remainder"; "(floordiv ?a ?c)"                => { Compute::new(&["?a", "?c"], small_remainder) }),
    // (x floordiv c) floordiv k = x floordiv (c·k)     when c, k > 0 and c·k fits in i64
    rw!("floordiv-nested";          "(floordiv (floordiv ?x ?c) ?k)"  => { Compute::new(&["?x", "?c", "?k"], nested) }),
    // (x mod m) floordiv c = (x floordiv c) mod (m / c)     when c > 0 divides m
    rw!("floordiv-of-mod";          "(floordiv (mod ?x ?m) ?c)"       => { Compute::new(&["?x", "?m", "?c"], of_mod) }),
    // (A + B floordiv c) floordiv d = (c·A + B) floordiv (c·d)     when c, d > 0
    //   (B floordiv c any summand with coefficient 1; A the rest of the sum, constant included)
    rw!("floordiv-nested-sum";      "(floordiv ?a ?d)"                => { Compute::new(&["?a", "?d"], nested_sum) }),
    // (Σ kᵢ·tᵢ + k0) floordiv c = Σ qᵢ·tᵢ + w     when c > 0 and Σ (kᵢ - qᵢ·c)·tᵢ + k0 lies in
    //   [w·c, w·c + c - 1] (qᵢ the floor or the ceiling of kᵢ / c: split-multiples by any
    //   integer, then interval-constant)
    rw!("floordiv-split-window";    "(floordiv ?a ?c)"                => { Compute::new(&["?a", "?c"], split_window) }),
]}

fn split_window(egraph: &mut EGraph, ac: &[Id]) -> Option<Id> {
    let c = positive(egraph, ac[1])?;
    let v = view(egraph, ac[0])?;
    let ranges: Vec<_> = v
        .terms
        .iter()
        .map(|&(id, k)| (super::range(egraph, id), k))
        .collect();
    let (qs, w) = super::window_split(&ranges, v.constant, c)?;
    let out = View {
        terms: v
            .terms
            .iter()
            .zip(qs)
            .filter(|&(_, q)| q != 0)
            .map(|(&(id, _), q)| (id, q))
            .collect(),
        constant: w,
    };
    Some(build_view(egraph, &out))
}

fn split_multiples(egraph: &mut EGraph, ac: &[Id]) -> Option<Id> {
    let c = positive(egraph, ac[1])?;
    let v = view(egraph, ac[0])?;
    let mut out = View::constant(floor_div(v.constant, c));
    let mut rest = View::constant(modulo(v.constant, c));
    for &(id, k) in &v.terms {
        if k % c == 0 {
            out.terms.push((id, k / c));
        } else {
            rest.terms.push((id, k));
        }
    }
    if out.terms.is_empty() && out.constant == 0 {
        return None;
    }
    let rest_id = build_view(egraph, &rest);
    let cid = num(egraph, c);
    let div = egraph.add(IxLang::FloorDiv([rest_id, cid]));
    let out = out.add(&View::atom(div))?;
    Some(build_view(egraph, &out))
}

fn small_remainder(egraph: &mut EGraph, ac: &[Id]) -> Option<Id> {
    let c = positive(egraph, ac[1])?;
    let v = view(egraph, ac[0])?;
    let (g, a, _b) = split_small_remainder(egraph, &v, c)?;
    let a_id = build_view(egraph, &a);
    if g == c {
        return Some(a_id);
    }
    let cid = num(egraph, c / g);
    Some(egraph.add(IxLang::FloorDiv([a_id, cid])))
}

fn nested(egraph: &mut EGraph, xck: &[Id]) -> Option<Id> {
    let c = positive(egraph, xck[1])?;
    let k = positive(egraph, xck[2])?;
    let ck = num(egraph, c.checked_mul(k)?);
    Some(egraph.add(IxLang::FloorDiv([xck[0], ck])))
}

fn of_mod(egraph: &mut EGraph, xmc: &[Id]) -> Option<Id> {
    let m = positive(egraph, xmc[1])?;
    let c = positive(egraph, xmc[2])?;
    if m % c != 0 {
        return None;
    }
    let div = egraph.add(IxLang::FloorDiv([xmc[0], xmc[2]]));
    let mc = num(egraph, m / c);
    Some(egraph.add(IxLang::Mod([div, mc])))
}

/// A summand `B floordiv c` (coefficient 1, `c > 0`) of the view `v`: the sum is
/// `A + B floordiv c`; returns `(c·A + B, c)`, the dividend with the inner division folded
/// in (`A + B floordiv c = (c·A + B) floordiv c` for every integer A and B).
pub fn fold_inner_division(egraph: &mut EGraph, v: &View) -> Option<(Id, i64)> {
    for &(atom, k) in &v.terms {
        if k != 1 {
            continue;
        }
        let inner = egraph[atom].nodes.iter().find_map(|n| match *n {
            IxLang::FloorDiv([b, cid]) => positive(egraph, cid).map(|c| (b, c)),
            _ => None,
        });
        let Some((b, c)) = inner else { continue };
        let a = v.add(&View {
            terms: vec![(atom, -1)],
            constant: 0,
        })?;
        let sum = a.scale(c)?.add(&view(egraph, b)?)?;
        return Some((build_view(egraph, &sum), c));
    }
    None
}

fn nested_sum(egraph: &mut EGraph, ad: &[Id]) -> Option<Id> {
    let d = positive(egraph, ad[1])?;
    let v = view(egraph, ad[0])?;
    if v.terms.len() < 2 && v.constant == 0 {
        return None; // (B floordiv c) floordiv d alone is floordiv-nested
    }
    let (sum, c) = fold_inner_division(egraph, &v)?;
    let cd = num(egraph, c.checked_mul(d)?);
    Some(egraph.add(IxLang::FloorDiv([sum, cd])))
}
