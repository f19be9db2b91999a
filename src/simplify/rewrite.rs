//! The e-graph stage: every result and constraint expression of a map goes into one
//! e-graph over the map's variable bounds, the rule tables run (bounded by
//! [`SimplifyLimits`]), and each expression is replaced by its cheapest equal form
//! (`cost.rs`), printed canonically. An expression is only replaced when the new form is
//! ranked lower (`cost.rs`).
//!
//! ```text
//! (d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16), domain: d0 in [0, 6], d1 in [0, 14]
//!   d1 floordiv 16  ~  0           (interval-constant: d1 floordiv 16 in [0, 0])
//!   d1 mod 16       ~  d1          (mod-in-range: d1 in [0, 14])
//!   =>  (d0, d1) -> (d0, d1)
//! ```

use super::analysis::{narrow, EGraph, Facts};
use super::cost::{expr_rank, Cheapest, IxCost};
use super::explain::explain_steps;
use super::language::{from_rec, to_rec};
use super::rules::{all_rules, Rule};
use super::{SimplifyLimits, Step};
use crate::expr::{canonical, Expr};
use crate::interval::Interval;
use egg::{Extractor, StopReason};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// The stop reason of a run whose roots' weights stayed put for
/// [`SimplifyLimits::max_plateau`] iterations: converged, not a bound hit.
const PLATEAU: &str = "plateau";

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(all_rules);

/// What one e-graph run did, for explain and for the benchmark.
#[derive(Clone, Debug, Default)]
pub struct RunReport {
    /// E-nodes in the graph when the run stopped.
    pub nodes: usize,
    /// The bound that stopped the run, if it did not saturate.
    pub limit_hit: Option<String>,
    /// Whether the run saturated (no rule changed the graph): not a bound, not the plateau.
    pub saturated: bool,
    /// Where the run's time went (for the benchmark; never read by the simplifier).
    pub phases: Phases,
}

/// Seconds spent per phase of the e-graph runs and the pre-pass, and counts: what the
/// benchmark's `--once` prints per map. Wall-clock, so only ever reported, never used to
/// decide anything.
#[derive(Clone, Copy, Debug, Default)]
pub struct Phases {
    pub prepass_s: f64,
    pub search_s: f64,
    pub apply_s: f64,
    pub rebuild_s: f64,
    pub extract_s: f64,
    pub runs: usize,
    pub iterations: usize,
}

impl Phases {
    pub fn add(&mut self, o: &Phases) {
        self.prepass_s += o.prepass_s;
        self.search_s += o.search_s;
        self.apply_s += o.apply_s;
        self.rebuild_s += o.rebuild_s;
        self.extract_s += o.extract_s;
        self.runs += o.runs;
        self.iterations += o.iterations;
    }
}

/// The rule name of a step the rules did not prove again (`prove_step`).
pub const UNPROVEN: &str = "(explanation unavailable)";

/// What [`saturate`] leaves: the graph, why it stopped, and where the time went (with the
/// number of iterations).
struct Saturation {
    egraph: EGraph,
    stop: StopReason,
    phases: Phases,
}

/// The rules run on `egraph` as egg's `Runner` with its `SimpleScheduler` runs them (the
/// same searches, applications, rebuilds and stops, in the same order, so the graph grows
/// exactly as before), without its per-rule bookkeeping: the runner read the clock after
/// every rule's search and every rule's application (twice the number of rules per
/// iteration, a tenth of an e-graph map's time under `perf`) and kept a map of rule
/// names per iteration. The node bound is checked after each rule's application as egg
/// does (it decides where a run stops, so the output); the time bound, only a safety net
/// (`SimplifyLimits::max_millis`), after each phase. `hook` runs at the start of each
/// iteration, as a runner hook does; an error stops the run (`StopReason::Other`).
fn saturate(
    mut egraph: EGraph,
    limits: &SimplifyLimits,
    mut hook: impl FnMut(&mut EGraph) -> Result<(), String>,
) -> Saturation {
    let rules: &[Rule] = &RULES;
    let start = Instant::now();
    let time_limit = Duration::from_millis(limits.max_millis);
    let mut phases = Phases::default();
    let mut iterations = 0usize;
    // e-nodes the last iteration added (a guess at what the next one adds)
    let mut growth = 0usize;
    egraph.rebuild();
    // egg's `check_limits`: time, then nodes, then iterations
    let check = |egraph: &EGraph, iterations: usize, now: Option<Instant>| {
        if let Some(now) = now {
            let elapsed = now.duration_since(start);
            if elapsed > time_limit {
                return Err(StopReason::TimeLimit(elapsed.as_secs_f64()));
            }
        }
        let size = egraph.total_size();
        if size > limits.max_nodes {
            return Err(StopReason::NodeLimit(size));
        }
        if iterations >= limits.max_iterations {
            return Err(StopReason::IterationLimit(iterations));
        }
        Ok(())
    };
    let stop = loop {
        let t0 = Instant::now();
        let mut result = check(&egraph, iterations, Some(t0));
        let (nodes, classes) = (egraph.total_size(), egraph.number_of_classes());
        result = result.and_then(|_| hook(&mut egraph).map_err(StopReason::Other));
        let hooked = (egraph.total_size(), egraph.number_of_classes());
        // Where the last iteration's growth would carry this one past the e-node bound,
        // the run likely stops after a few rules' applications, and the searches of the
        // rules after them are wasted (in the bound's last iteration of the slowest maps,
        // the first or second rule of 31 crosses it). There each rule searches a copy of
        // the graph as the iteration found it, just before its application: the very
        // matches an up-front search gives, and no search past the stop.
        let lazy = result.is_ok() && nodes.saturating_add(growth) > limits.max_nodes;
        let snapshot = lazy.then(|| egraph.clone());
        // (a search changes nothing, so egg's limit checks between searches only ever
        // repeat the one above)
        let matches: Vec<_> = match result {
            Ok(()) if !lazy => rules.iter().map(|rw| rw.search(&egraph)).collect(),
            _ => Vec::new(),
        };
        let t1 = Instant::now();
        if result.is_ok() {
            result = check(&egraph, iterations, Some(t1));
        }
        let mut applied = false;
        if result.is_ok() {
            for (i, rw) in rules.iter().enumerate() {
                let searched;
                let ms = match &snapshot {
                    Some(g) => {
                        searched = rw.search(g);
                        &searched[..]
                    }
                    None => &matches[i][..],
                };
                applied |= !rw.apply(&mut egraph, ms).is_empty();
                result = check(&egraph, iterations, None);
                if result.is_err() {
                    break;
                }
            }
        }
        drop(matches);
        drop(snapshot);
        let t2 = Instant::now();
        if result.is_ok() {
            result = check(&egraph, iterations, Some(t2));
        }
        egraph.rebuild();
        growth = egraph.total_size().saturating_sub(nodes);
        let t3 = Instant::now();
        phases.search_s += (t1 - t0).as_secs_f64();
        phases.apply_s += (t2 - t1).as_secs_f64();
        phases.rebuild_s += (t3 - t2).as_secs_f64();
        let saturated = !applied
            && (nodes, classes) == hooked
            && (nodes, classes) == (egraph.total_size(), egraph.number_of_classes());
        if saturated {
            result = result.and(Err(StopReason::Saturated));
        }
        iterations += 1;
        if let Some(stop) = result
            .err()
            .or_else(|| check(&egraph, iterations, Some(t3)).err())
        {
            break stop;
        }
    };
    phases.runs = 1;
    phases.iterations = iterations;
    Saturation {
        egraph,
        stop,
        phases,
    }
}

/// The steps of one rewrite `before => after` (equal under `bounds` and `facts`, as the
/// pre-pass found it; `node`, equal to both, is the subterm as written before the pre-pass
/// rewrote its operands): an e-graph with explanations from the three, run only until
/// `before` and `after` meet,
/// then its proof (`explain.rs`). The e-graph holds these two small terms alone, so the
/// proof is short whatever the size of the expression around them. A pair the run does not
/// prove within `limits` is reported as such (a step named `(explanation unavailable)`).
pub fn prove_step(
    before: Expr,
    after: Expr,
    node: Expr,
    bounds: &[Interval],
    facts: &[(Expr, Interval)],
    names: &[String],
    limits: &SimplifyLimits,
) -> Vec<Step> {
    let mut egraph = EGraph::new(Facts {
        bounds: bounds.to_vec(),
        generation: 0,
    })
    .with_explanations_enabled();
    let mut facts = facts.to_vec();
    facts.sort_by_key(|&(e, _)| crate::simplify::cost::expr_rank(e));
    for (e, iv) in facts {
        let id = egraph.add_expr(&to_rec(e));
        narrow(&mut egraph, id, iv);
    }
    let (from, to) = (to_rec(before), to_rec(after));
    let a = egraph.add_expr(&from);
    let b = egraph.add_expr(&to);
    // the node as it was before its operands were rewritten: its subterms are what the
    // pre-pass read (`(X fd 20) fd 6` where `before` holds `d0 fd 20` for `X fd 120`)
    egraph.add_expr(&to_rec(node));
    egraph.rebuild();
    let met = move |g: &EGraph| g.find(a) == g.find(b);
    let mut egraph = if met(&egraph) {
        egraph
    } else {
        saturate(egraph, limits, move |g| {
            g.analysis.generation = super::rules::next_generation();
            if met(g) {
                Err("proven".into())
            } else {
                Ok(())
            }
        })
        .egraph
    };
    if egraph.find(a) != egraph.find(b) {
        return vec![Step {
            rule: UNPROVEN.into(),
            before: crate::expr::display(before, names).to_string(),
            after: crate::expr::display(after, names).to_string(),
            why: "the pre-pass's rewrite was not proven again by the rules within the bounds"
                .into(),
        }];
    }
    explain_steps(&mut egraph, &from, &to, names)
}

/// The cheapest form of each expression under `bounds` and the constraint `facts` (each
/// `e in iv` narrows the interval of the class of `e`), in order; steps are collected only
/// when `explain` is set.
pub fn rewrite_exprs(
    exprs: &[Expr],
    bounds: &[Interval],
    facts: &[(Expr, Interval)],
    names: &[String],
    limits: &SimplifyLimits,
    explain: bool,
    steps: &mut Vec<Step>,
) -> (Vec<Expr>, RunReport) {
    let mut egraph = EGraph::new(Facts {
        bounds: bounds.to_vec(),
        generation: 0,
    });
    if explain {
        egraph = egraph.with_explanations_enabled();
    }
    // Smallest first, so a fact on a subterm is in place when a larger fact is added.
    let mut facts = facts.to_vec();
    facts.sort_by_key(|&(e, _)| crate::simplify::cost::expr_rank(e));
    for (e, iv) in facts {
        let id = egraph.add_expr(&to_rec(e));
        narrow(&mut egraph, id, iv);
    }
    egraph.rebuild();
    let recs: Vec<_> = exprs.iter().map(|&e| to_rec(e)).collect();
    let roots: Vec<_> = recs.iter().map(|r| egraph.add_expr(r)).collect();
    let hook_roots = roots.clone();
    let plateau_limit = limits.max_plateau;
    let mut plateau = 0usize;
    let mut last_weights: Vec<u64> = Vec::new();
    let run = saturate(egraph, limits, move |egraph| {
        // a new iteration: the searches of the last one are stale (`rules::Lhs`)
        egraph.analysis.generation = super::rules::next_generation();
        if plateau_limit == 0 {
            return Ok(());
        }
        let weights: Vec<u64> = hook_roots.iter().map(|&r| egraph[r].data.weight).collect();
        if weights == last_weights {
            plateau += 1;
            if plateau >= plateau_limit {
                return Err(PLATEAU.to_string());
            }
        } else {
            plateau = 0;
            last_weights = weights;
        }
        Ok(())
    });
    let saturated = matches!(run.stop, StopReason::Saturated);
    let limit_hit = match run.stop {
        StopReason::Saturated => None,
        StopReason::Other(s) if s == PLATEAU => None,
        StopReason::IterationLimit(n) => Some(format!("iteration limit ({n})")),
        StopReason::NodeLimit(n) => Some(format!("e-node limit ({n})")),
        StopReason::TimeLimit(s) => Some(format!("time limit ({} ms)", (s * 1000.0).round())),
        StopReason::Other(s) => Some(s),
    };
    let phases = run.phases;
    let mut egraph = run.egraph;
    let t_extract = std::time::Instant::now();
    let mut report = RunReport {
        nodes: egraph.total_number_of_nodes(),
        limit_hit,
        saturated,
        phases,
    };
    let mut out = Vec::with_capacity(exprs.len());
    if explain {
        // (egg's extractor: the proof is from the input's term to the extracted one)
        let best: Vec<_> = {
            let extractor = Extractor::new(&egraph, IxCost);
            roots.iter().map(|&r| extractor.find_best(r).1).collect()
        };
        for ((&e, rec), best_rec) in exprs.iter().zip(&recs).zip(best) {
            let new = canonical(from_rec(&best_rec));
            if expr_rank(new) < expr_rank(e) {
                steps.extend(explain_steps(&mut egraph, rec, &best_rec, names));
                out.push(new);
            } else {
                out.push(e);
            }
        }
    } else {
        let mut cheapest = Cheapest::new(&egraph);
        #[cfg(debug_assertions)]
        let egg = Extractor::new(&egraph, IxCost);
        for (&e, &r) in exprs.iter().zip(&roots) {
            let best = cheapest.term(r);
            #[cfg(debug_assertions)]
            assert_eq!(
                best,
                Some(from_rec(&egg.find_best(r).1)),
                "egg's extraction"
            );
            let new = best.map(canonical).unwrap_or(e);
            out.push(if expr_rank(new) < expr_rank(e) {
                new
            } else {
                e
            });
        }
    }
    report.phases.extract_s = t_extract.elapsed().as_secs_f64();
    (out, report)
}
