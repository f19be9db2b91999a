//! All rewrite rules, one table per operator family (`rules/*.rs`), and the helpers the
//! tables share.
//!
//! Policy for writing a rule:
//! - the comment above it is the identity, in ordinary notation, with its precondition;
//! - the precondition reads only facts that narrow (intervals, constants) and never the
//!   absence of a node;
//! - a rule that computes (a new constant, a rearranged sum) is a [`Compute`] applier whose
//!   function returns `None` when its precondition fails or any arithmetic would overflow;
//! - no commutativity or associativity rules: sums are read through the linear view of
//!   the analysis (`Σ kᵢ·classᵢ + k`) instead, and rebuilt by [`build_view`];
//! - every rule has a case in `sessions/simplify/` and is checked by brute force in
//!   `tests/soundness.rs`.

use super::analysis::{EGraph, Fact, Facts, View};
use super::language::IxLang;
use crate::interval::Interval;
use egg::{Applier, Id, PatternAst, Rewrite, Subst, Symbol, Var};

pub mod add;
pub mod ceildiv;
pub mod floordiv;
pub mod linearize;
pub mod minmax;
pub mod modulo;
pub mod mul;
pub mod twovalues;

pub type Rule = Rewrite<IxLang, Facts>;

/// Every rule, family by family, each searching through [`Lhs`].
pub fn all_rules() -> Vec<Rule> {
    let mut rules = Vec::new();
    rules.extend(add::rules());
    rules.extend(mul::rules());
    rules.extend(floordiv::rules());
    rules.extend(ceildiv::rules());
    rules.extend(modulo::rules());
    rules.extend(linearize::rules());
    rules.extend(minmax::rules());
    rules.extend(twovalues::rules());
    rules.extend(linearize::late_rules());
    let mut seen: Vec<PatternAst<IxLang>> = Vec::new();
    for rw in &mut rules {
        let ast = rw
            .searcher
            .get_pattern_ast()
            .expect("every rule's left-hand side is a pattern")
            .clone();
        let key = match seen.iter().position(|a| *a == ast) {
            Some(k) => k,
            None => {
                seen.push(ast.clone());
                seen.len() - 1
            }
        };
        rw.searcher = std::sync::Arc::new(Lhs {
            pattern: egg::Pattern::new(ast),
            key,
            keep: pre_test(rw.name.as_str()),
        });
    }
    rules
}

/// A rule's left-hand side as egg's pattern searches it, with the same matches in the
/// same order, for less: egg's default whole-graph search runs the pattern's matching
/// machine on every class (setting it up each time) though a class without a node of the
/// pattern's root operator cannot match; and the rules that share a left-hand side (six on
/// `(mod ?a ?c)`, three on `(+ ?a ?b)`, two on `(floordiv ?a ?c)`) searched the same graph
/// once each per iteration. Here classes are visited in egg's order, those without the
/// root operator skipped, and a search is kept for the other rules of the same pattern
/// until the iteration ends ([`Facts::generation`]); a rule's matches and their order are
/// what egg's search gives, so the e-graph grows exactly as before.
pub struct Lhs {
    pattern: egg::Pattern<IxLang>,
    /// The same for rules with the same pattern.
    key: usize,
    /// The rule's [`pre_test`], if it has one.
    keep: Option<PreTest>,
}

/// A test on a match that builds nothing, passed by every match on which the rule's applier
/// can return a form: the search hands the applier only those (the applier still checks
/// everything itself). The sum rules run on every `a + b` of the graph and fire on few.
type PreTest = Box<dyn Fn(&EGraph, &Subst) -> bool + Send + Sync>;

/// The [`PreTest`] of the rule `name`: for the sum rules that need a division among the
/// sum's atoms ([`some_atom`]), that test.
fn pre_test(name: &str) -> Option<PreTest> {
    let (a, b) = (var("?a"), var("?b"));
    let floordiv = |n: &IxLang| matches!(n, IxLang::FloorDiv(_));
    match name {
        "linearize-cancel" | "add-floordiv-to-mod" => {
            Some(Box::new(move |g, s| some_atom(g, &[s[a], s[b]], floordiv)))
        }
        "linearize-basis-change" => Some(Box::new(move |g, s| {
            linearize::basis_change_may_fire(g, &[s[a], s[b]])
        })),
        "linearize-merge-digits" => Some(Box::new(move |g, s| {
            some_atom(g, &[s[a], s[b]], |n| matches!(n, IxLang::Mod(_)))
        })),
        _ => None,
    }
}

static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A number no other iteration of any e-graph has had.
pub fn next_generation() -> u64 {
    GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

type Found = Vec<(Id, Vec<Subst>)>;

type Discriminant = std::mem::Discriminant<IxLang>;

thread_local! {
    /// The searches of this thread's current iteration: (pattern key, generation, matches).
    static FOUND: std::cell::RefCell<Vec<(usize, u64, std::rc::Rc<Found>)>> = Default::default();
    /// The classes of this thread's current iteration by the operators of their nodes, in
    /// egg's order of the classes: `(generation, [(operator, class ids)])`.
    static BY_OP: std::cell::RefCell<(u64, Vec<(Discriminant, Vec<Id>)>)> =
        Default::default();
}

/// `f` of the ids of the classes of `egraph` that have a node with operator `d`, in the
/// order of `egraph.classes()` (the classes a whole-graph search of a pattern rooted at
/// `d` visits, in its order), from an index built once per iteration `generation`. The
/// index was one pass over the classes per pattern, every iteration.
fn with_classes_of<T>(
    egraph: &EGraph,
    generation: u64,
    d: Discriminant,
    f: impl FnOnce(&[Id]) -> T,
) -> T {
    BY_OP.with(|b| {
        let mut b = b.borrow_mut();
        if b.0 != generation {
            let mut index: Vec<(Discriminant, Vec<Id>)> = Vec::new();
            for c in egraph.classes() {
                for (k, n) in c.nodes.iter().enumerate() {
                    let op = std::mem::discriminant(n);
                    // (each class once per operator)
                    if c.nodes[..k].iter().any(|m| std::mem::discriminant(m) == op) {
                        continue;
                    }
                    match index.iter_mut().find(|(o, _)| *o == op) {
                        Some((_, ids)) => ids.push(c.id),
                        None => index.push((op, vec![c.id])),
                    }
                }
            }
            *b = (generation, index);
        }
        let ids =
            b.1.iter()
                .find(|(o, _)| *o == d)
                .map_or(&[][..], |(_, ids)| &ids[..]);
        f(ids)
    })
}

impl egg::Searcher<IxLang, Facts> for Lhs {
    fn search_eclass_with_limit(
        &self,
        egraph: &EGraph,
        eclass: Id,
        limit: usize,
    ) -> Option<egg::SearchMatches<'_, IxLang>> {
        self.pattern.search_eclass_with_limit(egraph, eclass, limit)
    }

    fn search(&self, egraph: &EGraph) -> Vec<egg::SearchMatches<'_, IxLang>> {
        let generation = egraph.analysis.generation;
        let known = (generation != 0)
            .then(|| {
                FOUND.with(|f| {
                    f.borrow()
                        .iter()
                        .find(|e| e.0 == self.key && e.1 == generation)
                        .map(|e| e.2.clone())
                })
            })
            .flatten();
        let found: std::rc::Rc<Found> = match known {
            Some(k) => k,
            None => {
                let root = match self.pattern.ast.as_ref().last() {
                    Some(egg::ENodeOrVar::ENode(n)) => Some(std::mem::discriminant(n)),
                    _ => None,
                };
                let search = |ids: &mut dyn Iterator<Item = Id>| -> Found {
                    ids.filter_map(|id| self.pattern.search_eclass(egraph, id))
                        .map(|m| (m.eclass, m.substs))
                        .collect()
                };
                let found = match (root, generation) {
                    // the classes with a node of the root's operator, in egg's order, from
                    // the iteration's index (one pass over the classes for every pattern)
                    (Some(d), g) if g != 0 => {
                        with_classes_of(egraph, g, d, |ids| search(&mut ids.iter().copied()))
                    }
                    _ => search(
                        &mut egraph
                            .classes()
                            .filter(|c| {
                                root.is_none_or(|d| {
                                    c.nodes.iter().any(|n| std::mem::discriminant(n) == d)
                                })
                            })
                            .map(|c| c.id),
                    ),
                };
                let found = std::rc::Rc::new(found);
                if generation != 0 {
                    FOUND.with(|f| {
                        let mut f = f.borrow_mut();
                        f.retain(|e| e.1 == generation);
                        f.push((self.key, generation, found.clone()));
                    });
                }
                found
            }
        };
        let ast = || Some(std::borrow::Cow::Borrowed(&self.pattern.ast));
        match &self.keep {
            None => found
                .iter()
                .map(|(eclass, substs)| egg::SearchMatches {
                    eclass: *eclass,
                    substs: substs.clone(),
                    ast: ast(),
                })
                .collect(),
            Some(keep) => found
                .iter()
                .filter_map(|(eclass, substs)| {
                    let substs: Vec<Subst> =
                        substs.iter().filter(|s| keep(egraph, s)).cloned().collect();
                    (!substs.is_empty()).then(|| egg::SearchMatches {
                        eclass: *eclass,
                        substs,
                        ast: ast(),
                    })
                })
                .collect(),
        }
    }

    fn get_pattern_ast(&self) -> Option<&PatternAst<IxLang>> {
        Some(&self.pattern.ast)
    }

    fn vars(&self) -> Vec<Var> {
        self.pattern.vars()
    }
}

/// A pattern variable of a rule table (the tables are written in this crate, so a bad
/// name is a bug caught by the first test, never user input).
pub fn var(name: &str) -> Var {
    name.parse()
        .expect("a pattern variable written in a rule table")
}

/// An applier that computes its right-hand side: `f` receives the classes bound to the
/// named pattern variables, in order, and returns the class of the new form, or `None`
/// when the rule does not apply.
pub struct Compute {
    vars: Vec<Var>,
    f: fn(&mut EGraph, &[Id]) -> Option<Id>,
}

impl Compute {
    pub fn new(vars: &[&str], f: fn(&mut EGraph, &[Id]) -> Option<Id>) -> Compute {
        assert!(
            vars.len() <= 3,
            "a computed rule binds three variables at most"
        );
        Compute {
            vars: vars.iter().map(|v| var(v)).collect(),
            f,
        }
    }
}

impl Applier<IxLang, Facts> for Compute {
    fn apply_one(
        &self,
        egraph: &mut EGraph,
        eclass: Id,
        subst: &Subst,
        _ast: Option<&PatternAst<IxLang>>,
        rule_name: Symbol,
    ) -> Vec<Id> {
        // (no rule binds more than three variables: `Compute::new` checks)
        let mut args = [Id::from(0usize); 3];
        for (a, v) in args.iter_mut().zip(&self.vars) {
            *a = subst[*v];
        }
        let args = &args[..self.vars.len()];
        let t = profile::on().then(std::time::Instant::now);
        let nodes = egraph.total_size();
        let out = match (self.f)(egraph, args) {
            Some(new) if egraph.union_trusted(eclass, new, rule_name) => vec![new],
            _ => vec![],
        };
        if let Some(t) = t {
            profile::record(
                rule_name,
                t.elapsed(),
                egraph.total_size().saturating_sub(nodes),
                !out.is_empty(),
            );
        }
        out
    }
}

/// Per-rule counters of the [`Compute`] appliers (calls, time, e-nodes added, unions that
/// changed the graph), for the benchmark's `--once` only: off unless [`profile::enable`]
/// was called on this thread, and never read by the simplifier.
pub mod profile {
    use egg::Symbol;
    use std::cell::{Cell, RefCell};
    use std::collections::BTreeMap;
    use std::time::Duration;

    /// Calls, time, e-nodes added, unions that merged two classes.
    #[derive(Clone, Copy, Debug, Default)]
    pub struct RuleStats {
        pub calls: u64,
        pub time: Duration,
        pub nodes_added: u64,
        pub unions: u64,
    }

    thread_local! {
        static ON: Cell<bool> = const { Cell::new(false) };
        static STATS: RefCell<BTreeMap<String, RuleStats>> = RefCell::new(BTreeMap::new());
    }

    /// Starts counting on this thread.
    pub fn enable() {
        ON.with(|o| o.set(true));
    }

    pub(super) fn on() -> bool {
        ON.with(|o| o.get())
    }

    pub(super) fn record(rule: Symbol, t: Duration, added: usize, union: bool) {
        STATS.with(|s| {
            let mut s = s.borrow_mut();
            let e = s.entry(rule.as_str().to_string()).or_default();
            e.calls += 1;
            e.time += t;
            e.nodes_added += added as u64;
            e.unions += u64::from(union);
        });
    }

    /// The counters so far, by rule name, and resets them.
    pub fn take() -> BTreeMap<String, RuleStats> {
        STATS.with(|s| std::mem::take(&mut *s.borrow_mut()))
    }
}

/// The constant a class equals, if known.
pub fn constant(egraph: &EGraph, id: Id) -> Option<i64> {
    egraph[id].data.constant
}

/// The constant a class equals, if it is known and positive (a divisor we may reason with).
pub fn positive(egraph: &EGraph, id: Id) -> Option<i64> {
    constant(egraph, id).filter(|&c| c > 0)
}

/// The interval of a class.
pub fn range(egraph: &EGraph, id: Id) -> Interval {
    egraph[id].data.range
}

/// The linear view of a class (itself as an atom when it has none).
pub fn view(egraph: &EGraph, id: Id) -> Option<View> {
    Fact::view_of(egraph, id).into_canonical(egraph)
}

/// The interval of a linear view, from its atoms' intervals.
pub fn view_range(egraph: &EGraph, v: &View) -> Interval {
    v.terms
        .iter()
        .fold(Interval::point(v.constant), |acc, &(id, k)| {
            acc.add(&range(egraph, id).mul(&Interval::point(k)))
        })
}

/// The atoms of the operands `ab` (their views, as the analysis keeps them: a constant has
/// none, a class without a view is its own; a sum `a + b` has no other atoms).
pub fn atoms<'g>(egraph: &'g EGraph, ab: &'g [Id]) -> impl Iterator<Item = Id> + 'g {
    ab.iter().flat_map(move |&id| {
        let f = &egraph[id].data;
        let (terms, own): (&[(Id, i64)], _) = match (&f.constant, &f.view) {
            (Some(_), _) => (&[], None),
            (None, Some(v)) => (&v.terms, None),
            (None, None) => (&[], Some(id)),
        };
        terms.iter().map(|&(t, _)| t).chain(own)
    })
}

/// Whether some atom of the operands `ab` ([`atoms`]) has a node that `is`: a test that
/// builds nothing, for a rule to run before it builds a view.
pub fn some_atom(egraph: &EGraph, ab: &[Id], is: impl Fn(&IxLang) -> bool) -> bool {
    atoms(egraph, ab).any(|atom| egraph[atom].nodes.iter().any(&is))
}

/// Adds a node for `n`.
pub fn num(egraph: &mut EGraph, n: i64) -> Id {
    egraph.add(IxLang::Num(n))
}

/// Adds the sum `Σ kᵢ·atomᵢ + constant` (atoms in id order, constant last).
pub fn build_view(egraph: &mut EGraph, v: &View) -> Id {
    let mut acc: Option<Id> = None;
    for &(atom, k) in &v.terms {
        let term = if k == 1 {
            atom
        } else {
            let kid = num(egraph, k);
            egraph.add(IxLang::Mul([atom, kid]))
        };
        acc = Some(match acc {
            None => term,
            Some(a) => egraph.add(IxLang::Add([a, term])),
        });
    }
    match acc {
        None => num(egraph, v.constant),
        Some(a) if v.constant == 0 => a,
        Some(a) => {
            let c = num(egraph, v.constant);
            egraph.add(IxLang::Add([a, c]))
        }
    }
}

/// Greatest common divisor of two non-negative numbers.
pub fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    i64::try_from(a).unwrap_or(1)
}

/// The candidate factors `g` of the small-remainder split of `Σ kᵢ·tᵢ + k0` by `c`: the
/// distinct `gcd(kᵢ, c) > 1`, largest first.
pub fn remainder_factors(ks: impl Iterator<Item = i64>, c: i64) -> Vec<i64> {
    let mut gs: Vec<i64> = ks.map(|k| gcd(k, c)).filter(|&g| g > 1).collect();
    gs.sort_unstable_by(|a, b| b.cmp(a));
    gs.dedup();
    gs
}

/// The split of `(Σ kᵢ·tᵢ + k0) floordiv c` (`c > 0`, each `tᵢ` in `ranges[i]`) into
/// `Σ qᵢ·tᵢ + w` where the remainder `Σ (kᵢ - qᵢ·c)·tᵢ + k0` lies in one window
/// `[w·c, w·c + c - 1]`, each `qᵢ` the floor or the ceiling of `kᵢ / c` (the nearest
/// multiples: `(s0 * 9) floordiv 5 = s0 * 2 + (-s0) floordiv 5 = s0 * 2 - 1` for s0 in
/// [1, 5], where the floor alone leaves `(s0 * 4) floordiv 5`). The choices are tried in a
/// fixed order, every floor first; at most 2^8 of them. `None` when none fits.
pub fn window_split(terms: &[(Interval, i64)], k0: i64, c: i64) -> Option<(Vec<i64>, i64)> {
    if c <= 0 || terms.is_empty() {
        return None;
    }
    let two: Vec<usize> = (0..terms.len()).filter(|&i| terms[i].1 % c != 0).collect();
    if two.is_empty() || two.len() > 8 {
        return None;
    }
    for r in terms {
        if r.0.is_empty() || r.0.lo == i64::MIN || r.0.hi == i64::MAX {
            return None;
        }
    }
    for choice in 0u32..(1 << two.len()) {
        let mut qs: Vec<i64> = terms
            .iter()
            .map(|&(_, k)| crate::expr::arith::floor_div(k, c))
            .collect();
        for (bit, &i) in two.iter().enumerate() {
            if choice & (1 << bit) != 0 {
                qs[i] += 1;
            }
        }
        let (mut lo, mut hi) = (k0 as i128, k0 as i128);
        for (&(r, k), &q) in terms.iter().zip(&qs) {
            let rest = k as i128 - q as i128 * c as i128;
            let (x, y) = (rest * r.lo as i128, rest * r.hi as i128);
            lo += x.min(y);
            hi += x.max(y);
        }
        let w = lo.div_euclid(c as i128);
        if w == hi.div_euclid(c as i128) {
            return Some((qs, i64::try_from(w).ok()?));
        }
    }
    None
}

/// Splits `v` by a divisor `g` of `c`: `v = g·A' + B` with every coefficient of `A'`
/// whole and `B` (the terms not divisible by `g`, plus `constant mod g`) in `[0, g - 1]`.
/// Tries the candidate `g = gcd(kᵢ, c)` from largest to smallest; `None` if none works.
pub fn split_small_remainder(egraph: &EGraph, v: &View, c: i64) -> Option<(i64, View, View)> {
    for g in remainder_factors(v.terms.iter().map(|&(_, k)| k), c) {
        let r0 = crate::expr::arith::modulo(v.constant, g);
        let mut a = View::constant(v.constant.checked_sub(r0)? / g);
        let mut b = View::constant(r0);
        for &(id, k) in &v.terms {
            if k % g == 0 {
                a.terms.push((id, k / g));
            } else {
                b.terms.push((id, k));
            }
        }
        if Interval::new(0, g - 1).contains_interval(&view_range(egraph, &b)) {
            return Some((g, a, b));
        }
    }
    None
}
