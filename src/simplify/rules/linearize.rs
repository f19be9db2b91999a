//! Linearize/delinearize cancellation: an index split into a quotient and a remainder and
//! put back together is the index itself (seed 002; reshape round trips).
//!
//! ```text
//! (x floordiv c) * c + x mod c  =  x
//! f32[10,10,10] -> f32[50,20] -> f32[10,10,10]:  (d0, d1, d2) -> (d0, d1, d2)
//! ```
//! Wildcards: ?a ?b any expression. The rule reads the sum's linear view, so the two
//! halves may sit anywhere in a longer sum and carry a common factor.

use super::{atoms, build_view, num, positive, some_atom, view, view_range, Compute, Rule};
use crate::interval::Interval;
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

/// The rules that build a new dividend out of a pair: applied after every other table's in
/// an iteration, so where the e-node bound stops a run they take what the others leave.
#[rustfmt::skip]
pub fn late_rules() -> Vec<Rule> { vec![
    // kq·(x mod c) + kp·(x floordiv c) + rest = kq·x + (kp - kq·c)·(x floordiv c) + rest
    //   when c > 0 (the basis change x mod c = x - c·(x floordiv c): one division fewer;
    //   kp = kq·c is linearize-cancel; x floordiv c found as linearize-cancel finds it)
    rw!("linearize-basis-change"; "(+ ?a ?b)" => { Compute::new(&["?a", "?b"], basis_change) }),
    // k·(y mod m) + B = (k·y + B) mod (k·m)     when k > 1, m > 0 and every value of B lies
    //   in [0, k - 1] (B the rest of the sum, constant included: adjacent mixed-radix
    //   digits merged, mod-small-remainder read backwards); only where k·y + B then holds
    //   a pair x mod c, x floordiv c for linearize-cancel or linearize-basis-change)
    rw!("linearize-merge-digits"; "(+ ?a ?b)" => { Compute::new(&["?a", "?b"], merge_digits) }),
]}

/// A pair in the sum `v`: the summand `kq·(x mod c)` (class `q`) and the summand
/// `kp·(x floordiv c)` (class `p`, found by [`quotients`]), with `c > 0`.
struct Pair {
    q: Id,
    kq: i64,
    p: Id,
    kp: i64,
    x: Id,
    c: i64,
}

/// The first pair of `v` (summands in order, then each class's `mod` nodes in order, then
/// its quotients in order) that `keep` accepts.
fn find_pair(egraph: &EGraph, v: &View, keep: impl Fn(&Pair) -> bool) -> Option<Pair> {
    for &(q, kq) in &v.terms {
        for n in &egraph[q].nodes {
            let IxLang::Mod([x, cid]) = *n else { continue };
            let Some(c) = positive(egraph, cid) else {
                continue;
            };
            for p in quotients(egraph, x, cid, c) {
                let Some(&(_, kp)) = v.terms.iter().find(|(id, _)| *id == p) else {
                    continue;
                };
                let pair = Pair { q, kq, p, kp, x, c };
                if keep(&pair) {
                    return Some(pair);
                }
            }
        }
    }
    None
}

/// `v` with the pair's two summands replaced by `kq·x + rest_kp·(x floordiv c)`.
fn replace_pair(egraph: &EGraph, v: &View, pair: &Pair, rest_kp: i64) -> Option<View> {
    let x_view = Fact::view_of(egraph, pair.x).into_canonical(egraph)?;
    let mut removed = View {
        terms: vec![(pair.q, -pair.kq), (pair.p, rest_kp.checked_sub(pair.kp)?)],
        constant: 0,
    };
    removed.terms.sort();
    v.add(&removed)?.add(&x_view.scale(pair.kq)?)
}

fn cancel(egraph: &mut EGraph, ab: &[Id]) -> Option<Id> {
    // (the companions and the quotient of a pair are all divisions of the sum's atoms)
    if !some_atom(egraph, ab, |n| matches!(n, IxLang::FloorDiv(_))) {
        return None;
    }
    let v = View::sum_of(egraph, ab[0], ab[1], true)?;
    add_companions(egraph, &v);
    let pair = find_pair(egraph, &v, |p| Some(p.kp) == p.kq.checked_mul(p.c))?;
    let out = replace_pair(egraph, &v, &pair, 0)?;
    Some(build_view(egraph, &out))
}

/// Whether the sum `a + b` has among its atoms a remainder `x mod c` of a digit base and a
/// division of `x` (or of `y`, where `x = y floordiv a`), as a pair of [`basis_change`]
/// needs: a test that builds nothing (on the corpus, nine in ten sums with a remainder and
/// a quotient have no pair).
pub fn basis_change_may_fire(egraph: &EGraph, ab: &[Id]) -> bool {
    // the dividends a quotient of the pair may have (a handful; more are not looked for)
    let mut roots = [Id::from(0usize); 8];
    let mut n = 0;
    atoms(egraph, ab).for_each(|atom| {
        for node in &egraph[atom].nodes {
            let IxLang::Mod([x, _]) = *node else { continue };
            if !digit_base(egraph, x) {
                continue;
            }
            let inner = egraph[x].nodes.iter().filter_map(|m| match *m {
                IxLang::FloorDiv([y, _]) => Some(y),
                _ => None,
            });
            for r in std::iter::once(x).chain(inner) {
                if n < roots.len() {
                    roots[n] = egraph.find(r);
                    n += 1;
                }
            }
        }
    });
    let roots = &roots[..n];
    !roots.is_empty()
        && some_atom(
            egraph,
            ab,
            |node| matches!(*node, IxLang::FloorDiv([d, _]) if roots.contains(&egraph.find(d))),
        )
}

fn basis_change(egraph: &mut EGraph, ab: &[Id]) -> Option<Id> {
    if !basis_change_may_fire(egraph, ab) {
        return None;
    }
    let v = View::sum_of(egraph, ab[0], ab[1], true)?;
    let pair = find_pair(egraph, &v, |p| {
        p.kq.checked_mul(p.c)
            .is_some_and(|kc| kc != p.kp && p.kp.checked_sub(kc).is_some())
            && digit_base(egraph, p.x)
    })?;
    let rest_kp = pair.kp.checked_sub(pair.kq.checked_mul(pair.c)?)?;
    let out = replace_pair(egraph, &v, &pair, rest_kp)?;
    // only where the sum gets lighter than its class's lightest member so far: the rule
    // fires on every copy of a pair in every sum of the graph, and the copies in classes
    // that already hold a lighter form only spend the e-node bound
    let class = egraph.lookup(IxLang::Add([ab[0], ab[1]]))?;
    if view_weight(egraph, &out) >= egraph[class].data.weight {
        return None;
    }
    Some(build_view(egraph, &out))
}

/// Whether `x` is an index variable or a quotient `v floordiv a` of one (`a > 0`): the
/// digits of one variable, which is where a reshape chain leaves a remainder and a
/// quotient of one dividend side by side. (Over any other dividend the basis change fires
/// on every copy of a pair across the graph's many sums and spends the e-node bound that
/// the other rules need: on the corpus it made one reshape map dearer.)
fn digit_base(egraph: &EGraph, x: Id) -> bool {
    let is_var = |id: Id| egraph[id].nodes.iter().any(|n| matches!(n, IxLang::Var(_)));
    is_var(x)
        || egraph[x].nodes.iter().any(|n| match *n {
            IxLang::FloorDiv([v, a]) => is_var(v) && positive(egraph, a).is_some(),
            _ => false,
        })
}

/// The weight (`cost.rs`) of the sum [`build_view`] builds for `v`, from its atoms'
/// lightest members.
fn view_weight(egraph: &EGraph, v: &View) -> u64 {
    let terms = v.terms.iter().map(|&(id, k)| {
        egraph[id].data.weight
            + if k == 1 {
                0
            } else {
                crate::simplify::cost::MUL
            }
    });
    let adds = (v.terms.len() + usize::from(v.constant != 0)).saturating_sub(1) as u64;
    terms.fold(adds * crate::simplify::cost::ADD, u64::saturating_add)
}

fn merge_digits(egraph: &mut EGraph, ab: &[Id]) -> Option<Id> {
    if !some_atom(egraph, ab, |n| matches!(n, IxLang::Mod(_))) {
        return None;
    }
    let v = View::sum_of(egraph, ab[0], ab[1], true)?;
    if v.terms.len() < 2 {
        return None; // k·(y mod m) + k0 alone: mod-in-range's or nothing's
    }
    for &(t, k) in &v.terms {
        if k <= 1 {
            continue;
        }
        let inner = egraph[t].nodes.iter().find_map(|n| match *n {
            IxLang::Mod([y, mid]) => positive(egraph, mid).map(|m| (y, m)),
            _ => None,
        });
        let Some((y, m)) = inner else { continue };
        let rest = v.add(&View {
            terms: vec![(t, -k)],
            constant: 0,
        })?;
        if !Interval::new(0, k - 1).contains_interval(&view_range(egraph, &rest)) {
            continue;
        }
        let km = k.checked_mul(m)?;
        let sum = view(egraph, y)?.scale(k)?.add(&rest)?;
        // a quotient of y must meet a remainder of B, and the merged form with the pair
        // written in one division (cancel or basis change) must be lighter than the sum
        let Some(pair) = find_pair(egraph, &sum, |_| true) else {
            continue;
        };
        let rest_kp = pair.kp.checked_sub(pair.kq.checked_mul(pair.c)?)?;
        let after = replace_pair(egraph, &sum, &pair, rest_kp)?;
        let class = egraph.lookup(IxLang::Add([ab[0], ab[1]]))?;
        let merged = view_weight(egraph, &after).saturating_add(crate::simplify::cost::DIV);
        if merged >= egraph[class].data.weight {
            continue;
        }
        let sum = build_view(egraph, &sum);
        let kmid = num(egraph, km);
        return Some(egraph.add(IxLang::Mod([sum, kmid])));
    }
    None
}

fn cancel_mod(egraph: &mut EGraph, ac: &[Id]) -> Option<Id> {
    if !some_atom(egraph, &ac[..1], |n| matches!(n, IxLang::FloorDiv(_))) {
        return None;
    }
    let modulus = positive(egraph, ac[1])?;
    let v = view(egraph, ac[0])?;
    let pair = find_pair(egraph, &v, |p| {
        p.kq.checked_mul(p.c)
            .and_then(|km| p.kp.checked_sub(km))
            .is_some_and(|diff| diff % modulus == 0)
    })?;
    let out = replace_pair(egraph, &v, &pair, 0)?;
    let sum = build_view(egraph, &out);
    Some(egraph.add(IxLang::Mod([sum, ac[1]])))
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
