//! Facts about e-classes: the interval every member lies in (over the variable bounds),
//! the constant it equals if known, the weight of its cheapest member, and a *linear view*
//! (`Σ kᵢ·classᵢ + k`) the sum rules read instead of walking the graph.
//!
//! Facts only narrow: two classes that merge are equal on the domain, so the merged
//! interval is the intersection of both (egg #297: conditions read facts, never the absence
//! of a node). A class whose interval is one point gets that constant as a member
//! (`interval-constant`), which is how `d1 floordiv 16` becomes `0` for `d1 in [0, 14]`.
//!
//! ```text
//! d0 in [0, 6], d1 in [0, 14]
//!   class of d1 floordiv 16:  range [0, 0]  → unioned with 0
//!   class of d0 * 16 + d1:    range [0, 110], view 16·[d0] + 1·[d1] + 0
//! ```

use super::congruence::Congruence;
use super::cost::node_weight;
use super::language::IxLang;
use crate::expr::arith;
use crate::interval::Interval;
use egg::{Analysis, DidMerge, Id, Language};

pub type EGraph = egg::EGraph<IxLang, Facts>;

/// The analysis: variable bounds are its only input.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    pub bounds: Vec<Interval>,
    /// A number unique to the e-graph's current iteration (set by the runner's hook before
    /// each search, never 0 then): rules with the same left-hand side share one search per
    /// iteration by it (`rules::Lhs`). Read by nothing else.
    pub generation: u64,
}

/// `Σ terms[i].1 · class terms[i].0 + constant`; atoms sorted by id, no zero coefficients.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    pub terms: Vec<(Id, i64)>,
    pub constant: i64,
}

impl View {
    pub fn constant(c: i64) -> View {
        View {
            terms: Vec::new(),
            constant: c,
        }
    }
    pub fn atom(id: Id) -> View {
        View {
            terms: vec![(id, 1)],
            constant: 0,
        }
    }
    /// `self + other`, collecting like atoms; `None` on overflow.
    pub fn add(&self, other: &View) -> Option<View> {
        let mut terms = Vec::with_capacity(self.terms.len() + other.terms.len());
        terms.extend_from_slice(&self.terms);
        terms.extend_from_slice(&other.terms);
        Some(View {
            terms: collected(terms)?,
            constant: self.constant.checked_add(other.constant)?,
        })
    }
    /// `Fact::view_of(a).add(&Fact::view_of(b))` (with `canonical`, the views made
    /// canonical first, as `rules::view` gives them), built in one vector: the same
    /// terms, summed in the same order, so the same `None` on overflow.
    pub fn sum_of(egraph: &EGraph, a: Id, b: Id, canonical: bool) -> Option<View> {
        let mut terms = Vec::new();
        let ca = push_terms(egraph, a, canonical, &mut terms);
        let cb = push_terms(egraph, b, canonical, &mut terms);
        Some(View {
            terms: collected(terms)?,
            constant: ca.checked_add(cb)?,
        })
    }
    /// `k · self`; `None` on overflow.
    pub fn scale(&self, k: i64) -> Option<View> {
        if k == 0 {
            return Some(View::constant(0));
        }
        let terms = self
            .terms
            .iter()
            .map(|&(id, j)| Some((id, j.checked_mul(k)?)))
            .collect::<Option<_>>()?;
        Some(View {
            terms,
            constant: self.constant.checked_mul(k)?,
        })
    }
    /// The same view with every atom id canonical (atoms that merged are collected).
    pub fn canonical(&self, egraph: &EGraph) -> Option<View> {
        self.clone().into_canonical(egraph)
    }
    /// [`View::canonical`] in place (no second vector).
    pub fn into_canonical(self, egraph: &EGraph) -> Option<View> {
        let mut terms = self.terms;
        for t in &mut terms {
            t.0 = egraph.find(t.0);
        }
        // (already collected, as a class's view is unless its atoms merged since: atoms in
        // strictly increasing id order, no zero coefficient; `collected` would return it
        // as it is)
        let done = terms.windows(2).all(|w| w[0].0 < w[1].0) && terms.iter().all(|t| t.1 != 0);
        Some(View {
            terms: if done { terms } else { collected(terms)? },
            constant: self.constant,
        })
    }
}

/// Appends the terms of the view of class `id` ([`Fact::view_of`], atom ids canonical
/// when `canonical`) to `terms`; returns its constant.
fn push_terms(egraph: &EGraph, id: Id, canonical: bool, terms: &mut Vec<(Id, i64)>) -> i64 {
    let f = &egraph[id].data;
    match (&f.constant, &f.view) {
        (Some(c), _) => *c,
        (None, Some(v)) => {
            let at = terms.len();
            terms.extend_from_slice(&v.terms);
            if canonical {
                for t in &mut terms[at..] {
                    t.0 = egraph.find(t.0);
                }
            }
            v.constant
        }
        (None, None) => {
            terms.push((egraph.find(id), 1));
            0
        }
    }
}

/// Like atoms summed (in the order given, so an overflow is found as term-by-term addition
/// finds it), zero coefficients dropped, atoms in id order; `None` on overflow.
fn collected(mut terms: Vec<(Id, i64)>) -> Option<Vec<(Id, i64)>> {
    terms.sort_by_key(|&(id, _)| id); // stable: equal atoms keep their order
                                      // like atoms merged in place (no second vector)
    let mut w = 0;
    for r in 0..terms.len() {
        let (id, k) = terms[r];
        if w > 0 && terms[w - 1].0 == id {
            terms[w - 1].1 = terms[w - 1].1.checked_add(k)?;
        } else {
            terms[w] = (id, k);
            w += 1;
        }
    }
    terms.truncate(w);
    terms.retain(|&(_, k)| k != 0);
    Some(terms)
}

/// What is known about one e-class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fact {
    /// Every member's value lies here, at every point of the variable box (snapped to
    /// `cong`: both ends are members of the congruence class).
    pub range: Interval,
    /// Every member's value lies in this congruence class (`congruence.rs`).
    pub cong: Congruence,
    /// The value, when known to be one.
    pub constant: Option<i64>,
    /// The weight of the cheapest member found so far.
    pub weight: u64,
    /// The class as a linear combination of other classes, when it is a sum or a scaled term.
    pub view: Option<View>,
    /// How good the view is (sum of its atoms' weights and their number); lower is better.
    pub view_cost: u64,
}

impl Fact {
    /// The view of a class, itself as an atom when it has none.
    pub fn view_of(egraph: &EGraph, id: Id) -> View {
        let f = &egraph[id].data;
        match (&f.constant, &f.view) {
            (Some(c), _) => View::constant(*c),
            (None, Some(v)) => v.clone(),
            (None, None) => View::atom(egraph.find(id)),
        }
    }
}

fn view_cost(egraph: &EGraph, v: &View) -> u64 {
    v.terms.iter().fold(1u64, |acc, &(id, _)| {
        acc.saturating_add(egraph[id].data.weight).saturating_add(1)
    })
}

impl Analysis<IxLang> for Facts {
    type Data = Fact;

    fn make(egraph: &EGraph, enode: &IxLang) -> Fact {
        let data = |id: Id| &egraph[id].data;
        let (range, constant, cong) = match enode {
            IxLang::Num(c) => (Interval::point(*c), Some(*c), Congruence::exact(*c)),
            IxLang::Var(v) => {
                let r = egraph
                    .analysis
                    .bounds
                    .get(v.0 as usize)
                    .copied()
                    .unwrap_or(Interval::FULL);
                (r, None, Congruence::TOP)
            }
            n => {
                let (op, a, b) = n.op().expect("every other node is binary");
                let r = Interval::apply(op, &data(a).range, &data(b).range);
                let c = match (data(a).constant, data(b).constant) {
                    (Some(x), Some(y)) => arith::apply(op, x, y).ok(),
                    _ => None,
                };
                let g = Congruence::apply(op, data(a).cong, data(b).cong);
                (r, c, g)
            }
        };
        let range = cong.snap(range);
        let constant = constant
            .or(cong.constant())
            .or((range.is_point()).then_some(range.lo));
        let cong = match constant {
            Some(c) => Congruence::exact(c),
            None => cong,
        };
        let range = match constant {
            Some(c) => Interval::point(c),
            None => range,
        };
        let weight = enode.fold(node_weight(enode), |w, id| {
            w.saturating_add(data(id).weight)
        });
        let view = match *enode {
            IxLang::Add([a, b]) => View::sum_of(egraph, a, b, false),
            IxLang::Mul([a, b]) => match (data(a).constant, data(b).constant) {
                (_, Some(k)) => Fact::view_of(egraph, a).scale(k),
                (Some(k), _) => Fact::view_of(egraph, b).scale(k),
                _ => None,
            },
            _ => None,
        };
        let view_cost = view.as_ref().map_or(u64::MAX, |v| view_cost(egraph, v));
        Fact {
            range,
            cong,
            constant,
            weight,
            view,
            view_cost,
        }
    }

    fn merge(&mut self, to: &mut Fact, from: Fact) -> DidMerge {
        // (what `*to != old` and `*to != from` read, without a copy of `to`'s view: the
        // view changes only where `from`'s is taken, and then its cost drops)
        let scalars = |f: &Fact| (f.range, f.cong, f.constant, f.weight);
        let old = scalars(to);
        // Two classes that merge are equal on the domain: both congruences hold (they share
        // no value only where the domain is empty, and then either is as good).
        if let Some(c) = to.cong.intersect(from.cong) {
            to.cong = c;
        }
        to.range = to.cong.snap(to.range.intersect(&from.range));
        to.constant = to.constant.or(from.constant).or(to.cong.constant());
        if let Some(c) = to.constant {
            if to.range.contains(c) {
                to.range = Interval::point(c);
            }
            to.cong = Congruence::exact(c);
        }
        if to.constant.is_none() && to.range.is_point() {
            to.constant = Some(to.range.lo);
            to.cong = Congruence::exact(to.range.lo);
        }
        to.weight = to.weight.min(from.weight);
        let taken = from.view.is_some() && from.view_cost < to.view_cost;
        let same_view = taken || (to.view == from.view && to.view_cost == from.view_cost);
        let differs_from = !same_view || scalars(to) != scalars(&from);
        if taken {
            to.view = from.view;
            to.view_cost = from.view_cost;
        }
        DidMerge(taken || scalars(to) != old, differs_from)
    }

    fn modify(egraph: &mut EGraph, id: Id) {
        let f = &egraph[id].data;
        if f.range.is_empty() {
            return;
        }
        let c = match f.constant {
            Some(c) => c,
            None if f.range.is_point() => f.range.lo,
            None => return,
        };
        if egraph[id].nodes.iter().any(|n| matches!(n, IxLang::Num(_))) {
            return;
        }
        let cid = egraph.add(IxLang::Num(c));
        egraph.union_trusted(id, cid, "interval-constant");
    }
}

/// Narrows the interval of class `id` to `iv` (a constraint `e in iv` of the map, a fact on
/// the domain): the class and, when it becomes one point, its constant (unioned as
/// `constraint-fact`). Classes added afterwards read the narrowed interval.
pub fn narrow(egraph: &mut EGraph, id: Id, iv: Interval) {
    let id = egraph.find(id);
    let f = &mut egraph[id].data;
    let r = f.cong.snap(f.range.intersect(&iv));
    if r == f.range || r.is_empty() {
        return;
    }
    f.range = r;
    if !r.is_point() {
        return;
    }
    f.constant = Some(r.lo);
    f.cong = Congruence::exact(r.lo);
    if egraph[id].nodes.iter().any(|n| matches!(n, IxLang::Num(_))) {
        return;
    }
    let cid = egraph.add(IxLang::Num(r.lo));
    egraph.union_trusted(id, cid, "constraint-fact");
}
