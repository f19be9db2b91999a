//! `simplify M explain`: the rewrites that turned each expression into its simplified form,
//! in order, each with its rule's name and the interval facts the e-graph held about the
//! rewritten part (the facts a rule's condition reads).
//!
//! The chain comes from egg's explanations (a proof that the original and the extracted
//! form are equal), flattened so that each step rewrites one subterm:
//!
//! ```text
//! 1. interval-constant: d1 floordiv 16  =>  0
//!      because d1 floordiv 16 in [0, 0]; d1 in [0, 14]
//! 2. mod-in-range: d1 mod 16  =>  d1
//!      because d1 in [0, 14]
//! ```

use super::analysis::EGraph;
use super::cost::{expr_rank, Cheapest};
use super::language::{to_rec, IxLang};
use super::Step;
use crate::expr::{canonical, ExprKind, Op};
use crate::expr::{display, Expr, Linear};
use crate::interval::range_of;
use egg::{FlatTerm, RecExpr, Symbol};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The steps from `from` to `to`, both in `egraph` and proven equal by its run.
pub fn explain_steps(
    egraph: &mut EGraph,
    from: &RecExpr<IxLang>,
    to: &RecExpr<IxLang>,
    names: &[String],
) -> Vec<Step> {
    let best = best_forms(egraph);
    let mut nested = MAX_NESTED;
    explain_depth(egraph, &best, &mut nested, from, to, names, 0)
}

/// Most nested explanations (of an equality a sum rule used) per expression: each is an
/// egg proof of its own, and one per step of a long chain made `explain` cubic in it. Past
/// this, an equality is cited without its own steps.
const MAX_NESTED: usize = 16;

/// Largest subterm (nodes, as printed) whose cited equality gets its own nested proof:
/// the proof of an equality between two large terms is long, and each of its steps prints
/// the whole term (a chain of 300 divisions: 12 s with 16 such proofs, under 1 s with
/// none). A larger one is cited alone (`because X = Y`).
const MAX_NESTED_SIZE: u64 = 48;

/// The cheapest form of every e-class ([`Cheapest`], egg's extractor's choice), built once
/// per explanation:
/// an extractor per step (the cost analysis of the whole e-graph, again and again) made a
/// chain of n divisions cost n^3.
type Best = std::collections::HashMap<egg::Id, Expr>;

fn best_forms(egraph: &EGraph) -> Best {
    let mut cheapest = Cheapest::new(egraph);
    egraph
        .classes()
        .filter_map(|c| Some((c.id, cheapest.term(c.id)?)))
        .collect()
}

/// How deep the explanation of an equality a sum rule used may go.
const MAX_DEPTH: usize = 3;

/// Largest term (nodes of the RecExpr) explained through egg's flat explanation, which
/// writes the whole term out at every step; a larger one is explained from egg's tree
/// explanation (`tree_rewrites`), whose cost follows the number of steps.
const MAX_FLAT_NODES: usize = 64;

/// One rewrite of a proof: the rule (forward or not), and the subterm before and after.
type Rewrite = (Symbol, bool, Expr, Expr);

/// The rewrites of egg's tree explanation `seq`, in order: each term of the sequence is
/// reached from the last one's final form by its rule at this position, then its
/// children's own proofs rewrite its children. Subterms are built once per tree term
/// (memoized by address), so the work follows the size of the tree explanation, not the
/// number of steps times the size of the term.
fn tree_rewrites(seq: &egg::TreeExplanation<IxLang>, out: &mut Vec<Rewrite>) {
    type Memo = std::collections::HashMap<(*const egg::TreeTerm<IxLang>, bool), Expr>;
    /// The term's initial (`last` false) or final form.
    fn form(t: &std::rc::Rc<egg::TreeTerm<IxLang>>, last: bool, memo: &mut Memo) -> Expr {
        let key = (std::rc::Rc::as_ptr(t), last);
        if let Some(&e) = memo.get(&key) {
            return e;
        }
        let e = match &t.node {
            IxLang::Num(c) => Expr::constant(*c),
            IxLang::Var(v) => Expr::var(v.0),
            n => {
                let kids: Vec<Expr> = t
                    .child_proofs
                    .iter()
                    .map(|p| {
                        let end = if last { p.last() } else { p.first() };
                        end.map(|x| form(x, last, memo))
                            .unwrap_or(Expr::constant(0))
                    })
                    .collect();
                match (n.op(), kids.as_slice()) {
                    (Some((op, _, _)), [a, b]) => Expr::bin(op, *a, *b),
                    _ => Expr::constant(0),
                }
            }
        };
        memo.insert(key, e);
        e
    }
    fn walk(seq: &egg::TreeExplanation<IxLang>, memo: &mut Memo, out: &mut Vec<Rewrite>) {
        let mut prev: Option<Expr> = None;
        for t in seq {
            let init = form(t, false, memo);
            if let Some(p) = prev {
                match (t.forward_rule, t.backward_rule) {
                    (Some(r), _) => out.push((r, true, p, init)),
                    (None, Some(r)) => out.push((r, false, p, init)),
                    _ => {}
                }
            }
            for child in &t.child_proofs {
                walk(child, memo, out);
            }
            prev = Some(form(t, true, memo));
        }
    }
    walk(seq, &mut Memo::new(), out);
}

fn explain_depth(
    egraph: &mut EGraph,
    best: &Best,
    nested: &mut usize,
    from: &RecExpr<IxLang>,
    to: &RecExpr<IxLang>,
    names: &[String],
    depth: usize,
) -> Vec<Step> {
    let rewrites: Result<Vec<Rewrite>, _> = if from.as_ref().len() > MAX_FLAT_NODES {
        catch_unwind(AssertUnwindSafe(|| {
            let ex = egraph.explain_equivalence(from, to);
            let mut out = Vec::new();
            tree_rewrites(&ex.explanation_trees, &mut out);
            out
        }))
    } else {
        flat_rewrites(egraph, from, to)
    };
    let Ok(rewrites) = rewrites else {
        return vec![Step {
            rule: "(explanation unavailable)".into(),
            before: show(super::language::from_rec(from), names),
            after: show(super::language::from_rec(to), names),
            why: "egg could not produce a proof for this pair".into(),
        }];
    };
    let mut steps = Vec::new();
    for (rule, forward, before, after) in rewrites {
        let rule = if forward {
            rule.to_string()
        } else {
            format!("{rule} (reversed)")
        };
        // A sum rule reads its operands through their classes: first explain each operand
        // whose class is known to equal something simpler, and cite that equality.
        let mut why = facts(egraph, &rule, before, names);
        for (x, simpler) in used_equalities(egraph, best, before) {
            if depth < MAX_DEPTH && *nested > 0 && expr_rank(x).2 <= MAX_NESTED_SIZE {
                *nested -= 1;
                steps.extend(explain_depth(
                    egraph,
                    best,
                    nested,
                    &to_rec(x),
                    &to_rec(simpler),
                    names,
                    depth + 1,
                ));
            }
            if why.contains(&format!("{} in [", show(x, names))) {
                continue; // already cited as a constant interval
            }
            if !why.is_empty() {
                why.push_str("; ");
            }
            why += &format!("{} = {}", show(x, names), show(simpler, names));
        }
        steps.push(Step {
            why,
            rule,
            before: show(before, names),
            after: show(after, names),
        });
    }
    steps
}

/// The rewrites of egg's flat explanation from `from` to `to`: one whole term per step,
/// the rewritten subterm found by its path.
fn flat_rewrites(
    egraph: &mut EGraph,
    from: &RecExpr<IxLang>,
    to: &RecExpr<IxLang>,
) -> Result<Vec<Rewrite>, Box<dyn std::any::Any + Send>> {
    let flat = catch_unwind(AssertUnwindSafe(|| {
        let mut ex = egraph.explain_equivalence(from, to);
        ex.make_flat_explanation()
            .iter()
            .map(|t| (*t).clone())
            .collect::<Vec<FlatTerm<IxLang>>>()
    }));
    let flat = flat?;
    let mut out = Vec::new();
    for w in flat.windows(2) {
        let Some((path, rule, forward)) = rewritten(&w[1], &mut Vec::new()) else {
            continue;
        };
        let (Some(before), Some(after)) = (at(&w[0], &path), at(&w[1], &path)) else {
            continue;
        };
        out.push((rule, forward, flat_expr(before), flat_expr(after)));
    }
    Ok(out)
}

fn show(e: Expr, names: &[String]) -> String {
    display(e, names).to_string()
}

/// The path to the subterm a flat term marks as rewritten, with the rule and its direction.
fn rewritten(t: &FlatTerm<IxLang>, path: &mut Vec<usize>) -> Option<(Vec<usize>, Symbol, bool)> {
    if let Some(r) = t.forward_rule {
        return Some((path.clone(), r, true));
    }
    if let Some(r) = t.backward_rule {
        return Some((path.clone(), r, false));
    }
    for (i, c) in t.children.iter().enumerate() {
        path.push(i);
        if let Some(found) = rewritten(c, path) {
            return Some(found);
        }
        path.pop();
    }
    None
}

fn at<'a>(t: &'a FlatTerm<IxLang>, path: &[usize]) -> Option<&'a FlatTerm<IxLang>> {
    match path.split_first() {
        None => Some(t),
        Some((&i, rest)) => at(t.children.get(i)?, rest),
    }
}

fn flat_expr(t: &FlatTerm<IxLang>) -> Expr {
    match &t.node {
        IxLang::Num(c) => Expr::constant(*c),
        IxLang::Var(v) => Expr::var(v.0),
        n => match (n.op(), t.children.as_slice()) {
            (Some((op, _, _)), [a, b]) => Expr::bin(op, flat_expr(a), flat_expr(b)),
            _ => Expr::constant(0),
        },
    }
}

/// The interval the e-graph knows for `e` (its class's, or the plain range if absent).
fn range_in(egraph: &EGraph, e: Expr) -> crate::interval::Interval {
    match egraph.lookup_expr(&to_rec(e)) {
        Some(id) => egraph[id].data.range,
        None => range_of(e, &egraph.analysis.bounds),
    }
}

/// The facts about the rewritten part: its own interval for `interval-constant`; for a
/// division or `mod`, the dividend's interval and that of each of its terms.
fn facts(egraph: &EGraph, rule: &str, before: Expr, names: &[String]) -> String {
    if rule.starts_with("interval-constant") {
        return format!("{} in {}", show(before, names), range_in(egraph, before));
    }
    let mut parts = Vec::new();
    if let crate::expr::ExprKind::Bin(op, a, _) = before.kind() {
        if op.is_div_like() {
            parts.push(format!("{} in {}", show(a, names), range_in(egraph, a)));
            if let Some(l) = Linear::of(a) {
                if l.terms.len() > 1 {
                    for &(t, _) in &l.terms {
                        parts.push(format!("{} in {}", show(t, names), range_in(egraph, t)));
                    }
                }
            }
        }
    }
    constant_parts(egraph, before, names, &mut parts);
    parts.join("; ")
}

/// Facts "X in [c, c]" for the largest compound subterms of `e` the e-graph knows to be
/// constant (what a sum rule used when it dropped them).
fn constant_parts(egraph: &EGraph, e: Expr, names: &[String], parts: &mut Vec<String>) {
    let crate::expr::ExprKind::Bin(_, a, b) = e.kind() else {
        return;
    };
    for x in [a, b] {
        if x.as_const().is_some() || x.as_var().is_some() {
            continue;
        }
        let r = range_in(egraph, x);
        if r.is_point() {
            let fact = format!("{} in {r}", show(x, names));
            if !parts.contains(&fact) {
                parts.push(fact);
            }
        } else {
            constant_parts(egraph, x, names, parts);
        }
    }
}

/// The terms of `e` seen through sums and constant factors (what a linear view reads) that
/// the e-graph knows to equal something ranked lower, with that simpler form.
fn used_equalities(egraph: &EGraph, best: &Best, e: Expr) -> Vec<(Expr, Expr)> {
    fn atoms(e: Expr, out: &mut Vec<Expr>, top: bool) {
        match e.kind() {
            ExprKind::Bin(Op::Add, a, b) => {
                atoms(a, out, false);
                atoms(b, out, false);
            }
            ExprKind::Bin(Op::Mul, a, b) if b.as_const().is_some() => atoms(a, out, false),
            ExprKind::Bin(..) if !top => out.push(e),
            ExprKind::Bin(_, a, _) => atoms(a, out, false),
            _ => {}
        }
    }
    let mut xs = Vec::new();
    atoms(e, &mut xs, true);
    let mut out = Vec::new();
    for x in xs {
        let Some(id) = egraph.lookup_expr(&to_rec(x)) else {
            continue;
        };
        let Some(&best) = best.get(&egraph.find(id)) else {
            continue;
        };
        if expr_rank(best) < expr_rank(x)
            && canonical(best) != canonical(x)
            && !out.iter().any(|(y, _)| *y == x)
        {
            out.push((x, best));
        }
    }
    out
}
