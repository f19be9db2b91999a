//! The first tier's proof of done (`src/simplify/done.rs`) against the e-graph itself: on
//! random expressions of the shape the check accepts (sums of variables and divisions of
//! linear forms, under random bounds and linear constraint facts), whenever the check
//! says *done*, a full e-graph run from the expression finds nothing ranked lower
//! (`rewrite_exprs` returns its input). The check is what lets such expressions skip the
//! e-graph, so a counterexample here is an output the simplifier would now print dearer.

use ixmap::expr::{canonical, Expr, Op};
use ixmap::interval::Interval;
use ixmap::simplify::done::Settle;
use ixmap::simplify::rewrite::rewrite_exprs;
use ixmap::simplify::SimplifyLimits;
use proptest::prelude::*;
use proptest::strategy::ValueTree;

#[derive(Clone, Debug)]
struct Case {
    bounds: Vec<Interval>,
    /// (variable, coefficient) summands
    vars: Vec<(u32, i64)>,
    /// (coefficient, floordiv?, dividend terms, dividend constant, divisor)
    divs: Vec<(i64, bool, Vec<(u32, i64)>, i64, i64)>,
    constant: i64,
    /// (terms, constant, lo, width)
    facts: Vec<(Vec<(u32, i64)>, i64, i64, i64)>,
}

fn linear(terms: &[(u32, i64)], k: i64) -> Expr {
    terms.iter().fold(Expr::constant(k), |acc, &(v, c)| {
        acc.add(Expr::var(v).mul(Expr::constant(c)))
    })
}

impl Case {
    fn expr(&self) -> Expr {
        let mut e = linear(&self.vars, self.constant);
        for (q, floor, terms, k, c) in &self.divs {
            let op = if *floor { Op::FloorDiv } else { Op::Mod };
            let d = Expr::bin(op, linear(terms, *k), Expr::constant(*c));
            e = e.add(d.mul(Expr::constant(*q)));
        }
        canonical(e)
    }
    fn facts(&self) -> Vec<(Expr, Interval)> {
        self.facts
            .iter()
            .map(|(t, k, lo, w)| (canonical(linear(t, *k)), Interval::new(*lo, lo + w)))
            .collect()
    }
}

fn terms(nv: u32) -> impl Strategy<Value = Vec<(u32, i64)>> {
    prop::collection::vec((0..nv, -13i64..=13), 1..=3)
}

fn case() -> impl Strategy<Value = Case> {
    (1u32..=3).prop_flat_map(|nv| {
        (
            prop::collection::vec((-6i64..=6, 1i64..=24), nv as usize).prop_map(|b| {
                b.into_iter()
                    .map(|(lo, n)| Interval::new(lo, lo + n))
                    .collect()
            }),
            prop::collection::vec((0..nv, -5i64..=5), 0..=2),
            prop::collection::vec(
                (
                    prop_oneof![-9i64..=9, Just(1)],
                    any::<bool>(),
                    terms(nv),
                    -3i64..=20,
                    2i64..=16,
                ),
                1..=2,
            ),
            -5i64..=5,
            prop::collection::vec((terms(nv), -4i64..=4, -10i64..=40, 0i64..=40), 0..=1),
        )
            .prop_map(|(bounds, vars, divs, constant, facts)| Case {
                bounds,
                vars,
                divs,
                constant,
                facts,
            })
    })
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("d{i}")).collect()
}

fn cases() -> u32 {
    std::env::var("IXMAP_DONE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Where the check says done, the e-graph finds nothing ranked lower.
    #[test]
    fn done_expressions_are_e_graph_fixpoints(c in case()) {
        let e = c.expr();
        let facts = c.facts();
        let settle = Settle::new(&c.bounds, &facts);
        // (most cases are open: they pass trivially, and cost no e-graph run)
        if settle.open(e).is_some() || !e.has_div() {
            return Ok(());
        }
        let limits = SimplifyLimits::default();
        let (out, report) = rewrite_exprs(&[e], &c.bounds, &facts, &names(c.bounds.len()), &limits, false, &mut Vec::new());
        prop_assume!(report.limit_hit.is_none());
        let n = names(c.bounds.len());
        prop_assert_eq!(
            out[0], e, "the e-graph improved an expression called done: {} => {} (bounds {:?}, facts {:?})",
            ixmap::expr::display(e, &n), ixmap::expr::display(out[0], &n), c.bounds, facts
        );
    }
}

/// The generator reaches expressions the check calls done and ones it leaves open (so the
/// property above is not vacuous).
#[test]
fn the_generator_reaches_both_answers() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut done, mut open) = (0, 0);
    for _ in 0..500 {
        let c = case().new_tree(&mut runner).expect("a case").current();
        let e = c.expr();
        match Settle::new(&c.bounds, &c.facts()).open(e) {
            None if e.has_div() => done += 1,
            None => {}
            Some(_) => open += 1,
        }
    }
    assert!(done > 25 && open > 25, "done {done}, open {open}");
}
