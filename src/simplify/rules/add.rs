//! Sums. Wildcards: ?a ?b any expression.
//!
//! There are no commutativity or associativity rules: the analysis keeps every sum's
//! linear view (`Σ kᵢ·classᵢ + k`, like terms collected across the whole sum), and
//! `add-collect` adds that view back as a sum, so `d0 + d1 - d0` meets `d1`.

use super::{build_view, positive, some_atom, view, Compute, Rule};
use crate::simplify::analysis::{EGraph, View};
use crate::simplify::language::IxLang;
use egg::{rewrite as rw, Id};

#[rustfmt::skip]
pub fn rules() -> Vec<Rule> { vec![
    // a + 0 = a
    rw!("add-zero";    "(+ ?a 0)" => "?a"),
    // a + b = Σ kᵢ·tᵢ + k        (the sum's linear view, like terms collected)
    rw!("add-collect"; "(+ ?a ?b)" => { Compute::new(&["?a", "?b"], collect) }),
    // k·x - k·c·(x floordiv c) + R = k·(x mod c) + R     when c > 0 (x's atoms all in the sum)
    rw!("add-floordiv-to-mod"; "(+ ?a ?b)" => { Compute::new(&["?a", "?b"], floordiv_to_mod) }),
]}

fn collect(egraph: &mut EGraph, ab: &[Id]) -> Option<Id> {
    let v = View::sum_of(egraph, ab[0], ab[1], true)?;
    Some(build_view(egraph, &v))
}

/// Finds a term `q·(x floordiv c)` with `q = -k·c` in a sum that holds every atom of x, and
/// writes the sum with `k·(x mod c)` instead (`x - c·(x floordiv c) = x mod c` for every
/// integer x).
fn floordiv_to_mod(egraph: &mut EGraph, ab: &[Id]) -> Option<Id> {
    if !some_atom(egraph, ab, |n| matches!(n, IxLang::FloorDiv(_))) {
        return None;
    }
    let v = View::sum_of(egraph, ab[0], ab[1], true)?;
    for &(atom, q) in &v.terms {
        let divs: Vec<(Id, Id)> = egraph[atom]
            .nodes
            .iter()
            .filter_map(|n| match n {
                IxLang::FloorDiv([x, c]) => Some((*x, *c)),
                _ => None,
            })
            .collect();
        for (x, cid) in divs {
            let Some(c) = positive(egraph, cid) else {
                continue;
            };
            if q % c != 0 {
                continue;
            }
            let Some(k) = (q / c).checked_neg() else {
                continue;
            };
            // (the test below without building x's view: an atom of x the sum lacks
            // stays in R; q = i64::MIN is left to the arithmetic below, which stops there)
            if q != i64::MIN && has_foreign_atom(egraph, x, &v) {
                continue;
            }
            let Some(lx) = view(egraph, x) else { continue };
            // R = v - q·atom - k·x; it may not bring in atoms the sum did not have (the
            // e-graph keeps both forms, extraction picks the cheaper).
            let Some(rest) = v
                .add(&View {
                    terms: vec![(atom, q.checked_neg()?)],
                    constant: 0,
                })
                .and_then(|r| r.add(&lx.scale(k.checked_neg()?)?))
            else {
                continue;
            };
            if rest
                .terms
                .iter()
                .any(|t| !v.terms.iter().any(|u| u.0 == t.0))
            {
                continue;
            }
            let m = egraph.add(IxLang::Mod([x, cid]));
            let out = rest.add(&View {
                terms: vec![(m, k)],
                constant: 0,
            })?;
            return Some(build_view(egraph, &out));
        }
    }
    None
}

/// Whether the view of `x` (as [`view`] gives it, atoms canonical) has an atom that `v`
/// lacks, read off the analysis without building the view; `false` where its atoms merged
/// since (the view's coefficients may then cancel: left to [`view`]).
fn has_foreign_atom(egraph: &EGraph, x: Id, v: &View) -> bool {
    let f = &egraph[x].data;
    let lacks = |t: Id| !v.terms.iter().any(|u| u.0 == t);
    match (&f.constant, &f.view) {
        (Some(_), _) => false,
        (None, None) => lacks(egraph.find(x)),
        (None, Some(w)) => {
            let canon = |i: usize| egraph.find(w.terms[i].0);
            let distinct = (0..w.terms.len()).all(|i| (0..i).all(|j| canon(i) != canon(j)));
            distinct && (0..w.terms.len()).any(|i| lacks(canon(i)))
        }
    }
}
