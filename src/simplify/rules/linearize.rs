//! Linearize/delinearize cancellation: an index split into a quotient and a remainder and
//! put back together is the index itself (seed 002; reshape round trips).
//!
//! ```text
//! (x floordiv c) * c + x mod c  =  x
//! f32[10,10,10] -> f32[50,20] -> f32[10,10,10]:  (d0, d1, d2) -> (d0, d1, d2)
//! ```
//! Wildcards: ?a ?b any expression. The rule reads the sum's linear view, so the two
//! halves may sit anywhere in a longer sum and carry a common factor.

use super::{build_view, positive, view, Compute, Rule};
use crate::simplify::analysis::{EGraph, Fact, View};
use crate::simplify::language::IxLang;
use egg::{rewrite as rw, Id};

#[rustfmt::skip]
pub fn rules() -> Vec<Rule> { vec![
    // k·c·(x floordiv c) + k·(x mod c) + rest = k·x + rest     when c > 0
    //   (x floordiv c may also appear as y floordiv (a·c) where x = y floordiv a)
    rw!("linearize-cancel"; "(+ ?a ?b)" => { Compute::new(&["?a", "?b"], cancel) }),
    // (kp·(x floordiv m) + k·(x mod m) + rest) mod c = (k·x + rest) mod c
    //   when c, m > 0 and kp ≡ k·m (mod c)   (the pair differs from k·x by a multiple of c;
    //   canonical forms reduce the coefficients of a sum under mod, so the pair of a
    //   linearization is seldom written k·m, k)
    rw!("linearize-cancel-mod"; "(mod ?a ?c)" => { Compute::new(&["?a", "?c"], cancel_mod) }),
]}

fn cancel(egraph: &mut EGraph, ab: &[Id]) -> Option<Id> {
    let v = view(egraph, ab[0])?.add(&view(egraph, ab[1])?)?;
    add_companions(egraph, &v);
    for &(q, kq) in &v.terms {
        let mods: Vec<(Id, Id)> = egraph[q]
            .nodes
            .iter()
            .filter_map(|n| match *n {
                IxLang::Mod([x, c]) => Some((x, c)),
                _ => None,
            })
            .collect();
        for (x, cid) in mods {
            let Some(c) = positive(egraph, cid) else {
                continue;
            };
            for p in quotients(egraph, x, cid, c) {
                let Some(&(_, kp)) = v.terms.iter().find(|(id, _)| *id == p) else {
                    continue;
                };
                if Some(kp) != kq.checked_mul(c) {
                    continue;
                }
                let x_view = Fact::view_of(egraph, x).canonical(egraph)?;
                let mut removed = View {
                    terms: vec![(q, -kq), (p, -kp)],
                    constant: 0,
                };
                removed.terms.sort();
                let out = v.add(&removed)?.add(&x_view.scale(kq)?)?;
                return Some(build_view(egraph, &out));
            }
        }
    }
    None
}

fn cancel_mod(egraph: &mut EGraph, ac: &[Id]) -> Option<Id> {
    let modulus = positive(egraph, ac[1])?;
    let v = view(egraph, ac[0])?;
    for &(q, kq) in &v.terms {
        let mods: Vec<(Id, Id)> = egraph[q]
            .nodes
            .iter()
            .filter_map(|n| match *n {
                IxLang::Mod([x, c]) => Some((x, c)),
                _ => None,
            })
            .collect();
        for (x, cid) in mods {
            let Some(m) = positive(egraph, cid) else {
                continue;
            };
            for p in quotients(egraph, x, cid, m) {
                let Some(&(_, kp)) = v.terms.iter().find(|(id, _)| *id == p) else {
                    continue;
                };
                let Some(diff) = kq.checked_mul(m).and_then(|km| kp.checked_sub(km)) else {
                    continue;
                };
                if diff % modulus != 0 {
                    continue;
                }
                let x_view = Fact::view_of(egraph, x).canonical(egraph)?;
                let mut removed = View {
                    terms: vec![(q, -kq), (p, -kp)],
                    constant: 0,
                };
                removed.terms.sort();
                let out = v.add(&removed)?.add(&x_view.scale(kq)?)?;
                let sum = build_view(egraph, &out);
                return Some(egraph.add(IxLang::Mod([sum, ac[1]])));
            }
        }
    }
    None
}

/// For each summand `k·c·(x floordiv c)`, adds the node `x mod c` (no union): once the
/// other rules prove it equal to a summand written differently (`d1 mod 32` for
/// `((96·d0 + d1) mod 160) mod 32`), `cancel` finds the pair. Only the node is added, so
/// this proves nothing by itself.
fn add_companions(egraph: &mut EGraph, v: &View) {
    let mut todo = Vec::new();
    for &(q, k) in &v.terms {
        for n in &egraph[q].nodes {
            if let IxLang::FloorDiv([x, cid]) = *n {
                if positive(egraph, cid).is_some_and(|c| k % c == 0) {
                    todo.push((x, cid));
                }
            }
        }
    }
    for (x, cid) in todo {
        egraph.add(IxLang::Mod([x, cid]));
    }
}

/// The classes equal to `x floordiv c` that exist in the graph: the node itself, and
/// `y floordiv (a·c)` for each `x = y floordiv a` (nested division).
fn quotients(egraph: &EGraph, x: Id, cid: Id, c: i64) -> Vec<Id> {
    let mut out = Vec::new();
    if let Some(p) = egraph.lookup(IxLang::FloorDiv([x, cid])) {
        out.push(egraph.find(p));
    }
    for n in &egraph[x].nodes {
        let IxLang::FloorDiv([y, aid]) = *n else {
            continue;
        };
        let Some(ac) = positive(egraph, aid).and_then(|a| a.checked_mul(c)) else {
            continue;
        };
        let Some(acid) = egraph.lookup(IxLang::Num(ac)) else {
            continue;
        };
        if let Some(p) = egraph.lookup(IxLang::FloorDiv([y, acid])) {
            out.push(egraph.find(p));
        }
    }
    out
}
