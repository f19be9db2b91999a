//! Simplification of indexing maps under their domains.
//!
//! ```text
//! (d0, d1) -> (d0 + d1 floordiv 16, d1 mod 16), domain: d0 in [0, 6], d1 in [0, 14]
//!   =>  (d0, d1) -> (d0, d1), domain: d0 in [0, 6], d1 in [0, 14], is_simplified: true
//! ```
//!
//! The stages, in the order [`simplify`] runs them (see each module for its worked example):
//! - `constraints.rs`: constraints rewritten, tightened, dropped when always true; a
//!   constraint that never holds makes the map KNOWN EMPTY; bounds implied by constraints;
//! - `rescale.rs`: range variables with `s mod c in [r, r]` rescaled;
//! - `rewrite.rs`: the e-graph (`language.rs`, `analysis.rs`, `rules/*.rs`, `cost.rs`) on
//!   every result and constraint expression;
//! - unused range and runtime variables removed;
//!
//! repeated until nothing changes (a few rounds at most). `explain.rs` turns the e-graph's
//! proofs into [`Step`]s for `simplify M explain`.

pub mod analysis;
pub mod congruence;
pub mod constraints;
pub mod cost;
pub mod done;
pub mod explain;
pub mod fold;
pub mod language;
pub mod rescale;
pub mod rewrite;
pub mod rules;

use crate::expr::{Expr, ExprKind};
use crate::interval::Interval;
use crate::map::{remove_unused_range_symbols, IndexingMap, Status};

/// Bounds on the work one simplification may do.
#[derive(Copy, Clone, Debug)]
pub struct SimplifyLimits {
    /// Most e-nodes in one e-graph.
    pub max_nodes: usize,
    /// Most rule-application rounds of one e-graph run.
    pub max_iterations: usize,
    /// Most milliseconds of one e-graph run: a safety net only. The node and iteration
    /// bounds decide when a run stops, so the printed result never depends on the machine's
    /// load; a run that does reach this bound says so (`limit_hit`), and the benchmark
    /// corpus never does.
    pub max_millis: u64,
    /// Whether the deterministic pre-pass (`fold.rs`) runs before the e-graph (off only to
    /// measure it: `benches/simplify.rs -- --once` compares both).
    pub prepass: bool,
    /// Most iterations in a row in which no root's weight (`cost.rs`, the first part of
    /// the rank, kept per class by the analysis) went down: an e-graph run stops there, as
    /// converged (a count, so the result does not depend on the machine; 0: never).
    pub max_plateau: usize,
}

impl Default for SimplifyLimits {
    fn default() -> Self {
        SimplifyLimits {
            // 1,000: with the plateau stop, the corpus's printed outputs are those of 10,000
            // but for two of its 433 maps (one 2 weight units heavier of 640, one with other
            // constants of the same weight), and its slowest maps cost 2-3x less than
            // under 3,000 (`cargo bench --bench simplify -- --once` with IXMAP_MAX_NODES).
            max_nodes: 1_000,
            max_iterations: 30,
            max_millis: 5_000,
            prepass: true,
            max_plateau: 3,
        }
    }
}

/// One rewrite, for `simplify M explain`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub rule: String,
    pub before: String,
    pub after: String,
    /// The domain fact that allowed the rewrite (empty when it holds everywhere).
    pub why: String,
}

/// The rewrites of the constraint stages for `simplify M explain`: their text is built
/// only when explaining (a plain `simplify` formatted every step it never printed: a tenth
/// of a small map's instructions, callgrind over the random maps).
pub struct StepLog {
    on: bool,
    list: Vec<Step>,
}

impl StepLog {
    fn new(on: bool) -> StepLog {
        StepLog {
            on,
            list: Vec::new(),
        }
    }

    /// Whether steps are recorded (their text is needed).
    pub fn on(&self) -> bool {
        self.on
    }

    /// Records the step `f` makes, when steps are recorded.
    pub fn push(&mut self, f: impl FnOnce() -> Step) {
        if self.on {
            self.list.push(f());
        }
    }
}

/// A simplified map and the steps that got there.
#[derive(Clone, Debug)]
pub struct Simplified {
    pub map: IndexingMap,
    /// The rewrites, in order (filled only by [`simplify_explained`]).
    pub steps: Vec<Step>,
    /// A bound of [`SimplifyLimits`] that stopped the rewriter, if any.
    pub limit_hit: Option<String>,
    /// E-nodes in the largest e-graph built (0 when none was needed).
    pub nodes: usize,
    /// Where the time went, summed over every round (for the benchmark only).
    pub phases: rewrite::Phases,
}

/// Most rounds of the whole pipeline (each round runs only when the last changed something;
/// the last round that changes nothing is what proves the result a fixpoint).
const MAX_ROUNDS: usize = 8;

/// Most passes of constraint simplification and bound propagation in one round.
const MAX_CONSTRAINT_PASSES: usize = 64;

/// Simplifies `map` to a fixpoint within `limits`. Never returns a map that differs from
/// `map` at any point of its domain.
pub fn simplify(map: &IndexingMap, limits: &SimplifyLimits) -> Simplified {
    run(map, limits, false)
}

/// [`simplify`], also recording every rewrite and the fact that allowed it.
///
/// Ends at the map [`simplify`] prints. The explained run takes other paths than the plain
/// one (the pre-pass traced node by node, no memo, the e-graph from the input where the
/// plain run skips it as done), and rewriting is not confluent: on rare maps it stopped at
/// another form, equal on the domain, that its own later rounds took for a fixpoint
/// (`-((d0 * 6 + d1 * 2 + 6) floordiv 21) + 1` where `simplify` printed
/// `-((d0 * 6 + d1 * 2 - 15) floordiv 21)`; found by `random_maps_agree_pointwise`).
/// There the plain run's map is taken, and each expression that differs gets one more
/// step, the rules' proof that the explained form equals the printed one
/// (`rewrite::prove_step`, under the printed map's bounds and constraints).
pub fn simplify_explained(map: &IndexingMap, limits: &SimplifyLimits) -> Simplified {
    let mut ex = run(map, limits, true);
    let plain = run(map, limits, false);
    if ex.map == plain.map
        || (ex.map.status == plain.map.status && ex.map.to_string() == plain.map.to_string())
    {
        return ex;
    }
    let p = &plain.map;
    let same_shape = ex.map.status == Status::Defined
        && p.status == Status::Defined
        && ex.map.bounds() == p.bounds()
        && ex.map.results.len() == p.results.len()
        && ex.map.constraints.len() == p.constraints.len()
        && ex
            .map
            .constraints
            .iter()
            .zip(&p.constraints)
            .all(|(a, b)| a.1 == b.1);
    let (bounds, names) = (p.bounds(), p.names());
    if same_shape {
        // the results under the constraints as facts, the constraints alone (as
        // `rewrite_map` groups them)
        let pairs = ex
            .map
            .results
            .iter()
            .zip(&p.results)
            .map(|(&a, &b)| (a, b, &p.constraints[..]))
            .chain(
                ex.map
                    .constraints
                    .iter()
                    .zip(&p.constraints)
                    .map(|(a, b)| (a.0, b.0, &[][..])),
            );
        for (a, b, facts) in pairs {
            if a != b {
                ex.steps
                    .extend(rewrite::prove_step(a, b, a, &bounds, facts, &names, limits));
            }
        }
    } else {
        ex.steps.push(Step {
            rule: rewrite::UNPROVEN.into(),
            before: ex.map.to_string(),
            after: p.to_string(),
            why: "the explained run stopped at another map, equal on the domain; `simplify` prints this one".into(),
        });
    }
    ex.map = plain.map;
    ex.limit_hit = ex.limit_hit.or(plain.limit_hit);
    ex
}

/// What one `simplify` call has computed already, by exact input: the pre-pass and the
/// e-graph are deterministic functions of the expressions, the variable bounds and the
/// facts they are given, so a later round or fresh run (see [`run`]) that hands them the
/// same input gets the same output without the work. The fresh run that proves the
/// result a fixpoint repeats, on most maps, the pre-pass and the e-graph run of the
/// first run's last rounds on the very same input. Not used by explain (its steps come
/// from the runs themselves).
#[derive(Default)]
struct Memo {
    fold: Vec<(MemoKey, Vec<Expr>)>,
    egraph: Vec<(MemoKey, Vec<Expr>, rewrite::RunReport)>,
}

/// The input of a pre-pass or e-graph run: the expressions, the bounds, the facts.
type MemoKey = (Vec<Expr>, Vec<Interval>, Vec<(Expr, Interval)>);

/// Most entries of each kind a [`Memo`] keeps (a simplification makes a handful).
const MEMO_ENTRIES: usize = 16;

fn memo_find<'m, T>(
    memo: &'m [(MemoKey, T)],
    exprs: &[Expr],
    bounds: &[Interval],
    facts: &[(Expr, Interval)],
) -> Option<&'m T> {
    memo.iter()
        .find(|(k, _)| k.0 == exprs && k.1 == bounds && k.2 == facts)
        .map(|(_, v)| v)
}

fn memo_key(exprs: &[Expr], bounds: &[Interval], facts: &[(Expr, Interval)]) -> MemoKey {
    (exprs.to_vec(), bounds.to_vec(), facts.to_vec())
}

/// Largest total size (nodes, as printed) of the expressions `simplify M explain` proves
/// with one e-graph proof from the input; past it, each rewrite of the pre-pass is proven
/// on its own (`rewrite::prove_step`), so explain's time grows with the number of steps.
const DIRECT_EXPLAIN_MAX: u64 = 64;

/// Most fresh runs on a result that the previous run did not leave as a fixpoint.
const MAX_FRESH_RUNS: usize = 3;

/// [`run_once`], then fresh runs on its result until one changes nothing. Rewriting is not
/// confluent: a run from the printed result starts from other bounds, facts and a cold
/// e-graph, and could reach a cheaper form (`(x * 6 + 240) floordiv 256` then
/// `(x * 3 + 120) floordiv 128`) or break a tie otherwise (`d0 mod 6 - 5` then
/// `d2 + d0 mod 6` with `d2 in [-5, -5]`), so `simplify` of its own output printed other
/// text in 25 of 71,098 random maps (SPEC §2 promises stable text). The check costs one
/// more run of the pipeline per map.
fn run(map: &IndexingMap, limits: &SimplifyLimits, explain: bool) -> Simplified {
    // (once per call: the fresh runs reuse the canonical forms the first run computed,
    // a pure function of the expression)
    crate::expr::linear::forget_canonical_forms();
    let memo = std::cell::RefCell::new(Memo::default());
    let (mut out, mut fixpoint) = run_once(map, limits, explain, &memo);
    for _ in 0..MAX_FRESH_RUNS {
        if out.map.status != Status::Defined || (fixpoint && settled(&out.map)) {
            break;
        }
        let (again, again_fixpoint) = run_once(&out.map, limits, explain, &memo);
        // (equal maps first: equality implies the same text, and printing both costs more)
        if again.map == out.map
            || (again.map.status == out.map.status && again.map.to_string() == out.map.to_string())
        {
            break;
        }
        out.steps.extend(again.steps);
        out.limit_hit = out.limit_hit.or(again.limit_hit);
        out.nodes = out.nodes.max(again.nodes);
        out.map = again.map;
        fixpoint = again_fixpoint;
    }
    out
}

/// Whether a fresh run of the pipeline on `m`, the result of a run whose last round changed
/// nothing, would print `m` again, proven without running it: nothing in `m` is left for
/// the e-graph (every expression either fails [`worth_rewriting`] — no division, modulo,
/// min or max, no variable fixed to a point — or passes the first tier's proof of done,
/// `done.rs`), and its canonical form is itself. A fresh run's first round then does what
/// that last round did on the same map (the constraint passes, the rescaling and the
/// removal of unused symbols are functions of the map; the pre-pass is a function of the
/// same expressions, bounds and facts, on which that round's pre-pass changed nothing;
/// the e-graph stage picks nothing), so it changes nothing, and the fresh runs that make
/// `simplify` idempotent (see [`run`]) are not needed. Each fresh run cost one more pass
/// of the pipeline.
fn settled(m: &IndexingMap) -> bool {
    let bounds = m.bounds();
    let point_vars: Vec<bool> = bounds.iter().map(|b| b.is_point()).collect();
    let picked = |exprs: &mut dyn Iterator<Item = Expr>| -> Vec<Expr> {
        exprs.filter(|&e| worth_rewriting(e, &point_vars)).collect()
    };
    let results = picked(&mut m.results.iter().copied());
    if m.results.iter().any(|&e| pinned_by_fact(e, m)) {
        return false;
    }
    let constraints = picked(&mut m.constraints.iter().map(|c| c.0));
    // what is left must be done (`done.rs`): the results under the constraints as facts,
    // the constraints alone, as `rewrite_map` groups them
    let all_done = (results.is_empty()
        || done::Settle::new(&bounds, &m.constraints).all_done(&results))
        && (constraints.is_empty() || done::Settle::new(&bounds, &[]).all_done(&constraints));
    if !all_done {
        return false;
    }
    // (on a copy without the variables' names, which canonical form never changes: a
    // copy of each name was an allocation or two per variable)
    let unnamed = |vs: &[crate::map::Variable]| -> Vec<crate::map::Variable> {
        vs.iter()
            .map(|v| crate::map::Variable {
                name: String::new(),
                bounds: v.bounds,
            })
            .collect()
    };
    let mut c = IndexingMap {
        dims: unnamed(&m.dims),
        ranges: unnamed(&m.ranges),
        runtimes: unnamed(&m.runtimes),
        results: m.results.clone(),
        constraints: m.constraints.clone(),
        is_simplified: m.is_simplified,
        status: m.status,
    };
    c.canonicalize();
    c.normalize_divisors();
    c.results == m.results
        && c.constraints == m.constraints
        && c.is_simplified == m.is_simplified
        && c.status == m.status
        && (c.dims.len(), c.ranges.len(), c.runtimes.len())
            == (m.dims.len(), m.ranges.len(), m.runtimes.len())
        && c.vars().map(|v| v.bounds).eq(m.vars().map(|v| v.bounds))
}

/// One pass of the pipeline to its fixpoint; also whether it reached one (its last round
/// changed nothing), not stopped by [`MAX_ROUNDS`].
fn run_once(
    map: &IndexingMap,
    limits: &SimplifyLimits,
    explain: bool,
    memo: &std::cell::RefCell<Memo>,
) -> (Simplified, bool) {
    let mut steps = StepLog::new(explain);
    let mut m = map.clone();
    m.canonicalize();
    m.normalize_divisors();
    if m.status != Status::Defined {
        let out = Simplified {
            map: m,
            steps: Vec::new(),
            limit_hit: None,
            nodes: 0,
            phases: rewrite::Phases::default(),
        };
        return (out, true);
    }
    // (the map is filled in at the end; a map found empty takes the input's canonical
    // form again then, rather than a copy of it kept through every round)
    let mut out = Simplified {
        map: IndexingMap {
            dims: Vec::new(),
            ranges: Vec::new(),
            runtimes: Vec::new(),
            results: Vec::new(),
            constraints: Vec::new(),
            is_simplified: false,
            status: Status::Defined,
        },
        steps: Vec::new(),
        limit_hit: None,
        nodes: 0,
        phases: rewrite::Phases::default(),
    };
    let mut fixpoint = false;
    let mut last_egraph_input = None;
    let mut saturated_output = None;
    // Constraints and bounds that a constraint pass left exactly as it found them (see
    // below).
    let mut quiet: Option<(Vec<(Expr, Interval)>, Vec<Interval>)> = None;
    for _ in 0..MAX_ROUNDS {
        // (what `same` compares: no copy of the variables' names)
        let before = snapshot(&m);
        // Constraints and the bounds they imply to a fixpoint before the e-graph: bound
        // propagation through one constraint can narrow two variables by a unit a pass
        // (`s0 * -7 - d2 * 5 in [8, 8]`), and left to the rounds it ran out of them, so the
        // output simplified again tightened further (not idempotent; found by the property).
        for pass in 0..MAX_CONSTRAINT_PASSES {
            // A pass is a function of the constraints and the bounds (it reads no result;
            // of the results it only normalizes divisors, done here, and canonicalizes,
            // which they are at every pass: the input is canonicalized, and so is every
            // e-graph output). Where a pass left both exactly as they were, a later
            // round's pass on the same constraints and bounds changes nothing again: it
            // is skipped (a round whose e-graph changed only results repeated it, a sixth
            // of a small map's instructions).
            if let Some((cs, bs)) = &quiet {
                m.normalize_divisors();
                if m.status == Status::Defined
                    && *cs == m.constraints
                    && m.vars().map(|v| v.bounds).eq(bs.iter().copied())
                {
                    break;
                }
            }
            // (the pass's input: the round's snapshot where it is that, else a copy)
            let from_before = pass == 0
                && m.constraints == before.1
                && m.vars().map(|v| v.bounds).eq(before.2.iter().copied());
            let copy = (!from_before).then(|| (m.constraints.clone(), m.bounds()));
            if !constraints::simplify_constraints(&mut m, &mut steps) || m.status != Status::Defined
            {
                let (cs, bs) = match &copy {
                    Some((cs, bs)) => (cs, bs),
                    None => (&before.1, &before.2),
                };
                if m.status == Status::Defined
                    && *cs == m.constraints
                    && m.vars().map(|v| v.bounds).eq(bs.iter().copied())
                {
                    quiet = Some((cs.clone(), bs.clone()));
                }
                break;
            }
        }
        if m.status == Status::Defined {
            rescale::rescale_symbols(&mut m, &mut steps);
            // Rerun the e-graph when the domain moved or its last run changed an expression:
            // a run from the extracted form can reach forms the first run's bounds did not
            // (rewriting is not confluent), and the map is final only when a run on it
            // changes nothing, which is what makes `simplify` idempotent.
            // Each accepted form is ranked strictly lower than the one it replaces, so this
            // ends.
            // A map that is what a saturated run extracted needs no second run (only the
            // pre-pass, which may still find a cheaper form): every term and fact of a run
            // from it is in the saturated graph it came from, whose cheapest form it is.
            // (compared in place: the state is copied only when a run is made)
            let same_input = last_egraph_input
                .as_ref()
                .is_some_and(|s| egraph_state_is(&m, s));
            if !same_input || out.limit_hit.is_some() {
                let proven = saturated_output
                    .as_ref()
                    .is_some_and(|s| egraph_state_is(&m, s));
                let state = egraph_state(&m);
                let saturated = rewrite_map(
                    &mut m,
                    limits,
                    explain,
                    &mut steps.list,
                    &mut out,
                    proven,
                    memo,
                );
                m.canonicalize();
                last_egraph_input = Some(state);
                saturated_output = saturated.then(|| egraph_state(&m));
            }
        }
        if m.status == Status::Defined && !range_symbols_all_used(&m) {
            let (m2, removed) = remove_unused_range_symbols(&m);
            if removed > 0 {
                steps.push(|| Step {
                    rule: "remove-unused-symbols".into(),
                    before: format!("{removed} unused"),
                    after: "(removed)".into(),
                    why: "no result uses them and no constraint ties them to the rest".into(),
                });
            }
            m = m2;
        }
        if m.status != Status::Defined || snapshot_is(&m, &before) {
            fixpoint = true;
            break;
        }
    }
    m.is_simplified = m.status == Status::Defined;
    if m.status == Status::KnownEmpty {
        // Found empty along the way: what the results were rewritten to under an empty
        // domain means nothing (any equation holds there), so the input's results stay,
        // readable as printed (`show ... as mlir` prints them beside `KNOWN EMPTY`).
        // The input's variables too: symbols removed on the way renumber the rest.
        let mut empty = map.clone();
        empty.canonicalize();
        empty.normalize_divisors();
        empty.status = Status::KnownEmpty;
        empty.is_simplified = false;
        m = empty;
    }
    out.map = m;
    if explain {
        out.steps = steps.list;
    }
    (out, fixpoint)
}

/// What an e-graph run of the map reads: the bounds, the constraints and the results.
type EgraphState = (Vec<Interval>, Vec<(Expr, Interval)>, Vec<Expr>);

fn egraph_state(m: &IndexingMap) -> EgraphState {
    (m.bounds(), m.constraints.clone(), m.results.clone())
}

/// `egraph_state(m) == *s`, without the copy.
fn egraph_state_is(m: &IndexingMap, s: &EgraphState) -> bool {
    m.vars().map(|v| v.bounds).eq(s.0.iter().copied()) && m.constraints == s.1 && m.results == s.2
}

/// Whether every range variable occurs in a result, so that
/// `remove_unused_range_symbols` has nothing to remove (it then returns a copy of the
/// map): the copy is spared. (Variables past 62 share one bit: not decided here.)
fn range_symbols_all_used(m: &IndexingMap) -> bool {
    let (nd, nr) = (m.dims.len(), m.ranges.len());
    if nd + nr > 63 {
        return false;
    }
    let used = m.results.iter().fold(0u64, |a, e| a | e.var_mask());
    (nd..nd + nr).all(|v| used & (1u64 << v) != 0)
}

/// What a round's fixpoint test compares: results, constraints, bounds, status.
type Snapshot = (Vec<Expr>, Vec<(Expr, Interval)>, Vec<Interval>, Status);

/// `snapshot(m) == *s`, without the copy.
fn snapshot_is(m: &IndexingMap, s: &Snapshot) -> bool {
    m.results == s.0
        && m.constraints == s.1
        && m.vars().map(|v| v.bounds).eq(s.2.iter().copied())
        && m.status == s.3
}

fn snapshot(m: &IndexingMap) -> Snapshot {
    (
        m.results.clone(),
        m.constraints.clone(),
        m.bounds(),
        m.status,
    )
}

/// Whether a result is, as written, the expression of a constraint that pins it to one
/// value (`d0 - r0` under `d0 - r0 in [0, 0]`, as fusion indexing writes a dynamic
/// slice's offset): that constant, by the constraint fact (`constraint-fact`), though it
/// has nothing else to simplify.
fn pinned_by_fact(e: Expr, m: &IndexingMap) -> bool {
    m.constraints
        .iter()
        .any(|&(c, iv)| iv.is_point() && !iv.is_empty() && c == e)
}

/// Whether the e-graph could improve `e`: it has a division or mentions a variable whose
/// bounds are a single point (the linear form is otherwise already the simplest).
fn worth_rewriting(e: Expr, point_vars: &[bool]) -> bool {
    // Read off the node's facts (O(1)) rather than walked: a division, min or max
    // anywhere, else a point variable among those the expression uses (the walk below
    // only where a variable past 62 occurs, which the mask does not tell apart). The
    // walk was 2% of a median map's instructions (callgrind, random group).
    if e.has_div() || e.has_min_max() {
        return true;
    }
    let mask = e.var_mask();
    if mask >> 63 != 0 {
        return worth_rewriting_walk(e, point_vars);
    }
    let mut low = mask;
    while low != 0 {
        let v = low.trailing_zeros() as usize;
        if point_vars.get(v).copied().unwrap_or(false) {
            return true;
        }
        low &= low - 1;
    }
    false
}

/// [`worth_rewriting`] by a walk of `e`.
fn worth_rewriting_walk(e: Expr, point_vars: &[bool]) -> bool {
    match e.kind() {
        ExprKind::Const(_) => false,
        ExprKind::Var(v) => point_vars.get(v as usize).copied().unwrap_or(false),
        ExprKind::Bin(op, a, b) => {
            op.is_div_like()
                || op.is_min_max()
                || worth_rewriting_walk(a, point_vars)
                || worth_rewriting_walk(b, point_vars)
        }
    }
}

/// Runs the e-graph on the results and constraint expressions that could improve (with
/// `proven`, only where the pre-pass changed them). Returns whether every e-graph run
/// saturated (true when none ran).
fn rewrite_map(
    m: &mut IndexingMap,
    limits: &SimplifyLimits,
    explain: bool,
    steps: &mut Vec<Step>,
    out: &mut Simplified,
    proven: bool,
    memo: &std::cell::RefCell<Memo>,
) -> bool {
    let bounds = m.bounds();
    let point_vars: Vec<bool> = bounds.iter().map(|b| b.is_point()).collect();
    let nr = m.results.len();
    let all: Vec<Expr> = m
        .results
        .iter()
        .copied()
        .chain(m.constraints.iter().map(|c| c.0))
        .collect();
    let picked: Vec<usize> = (0..all.len())
        .filter(|&i| worth_rewriting(all[i], &point_vars) || (i < nr && pinned_by_fact(all[i], m)))
        .collect();
    if picked.is_empty() {
        return true;
    }
    let mut saturated = true;
    // The constraints are facts for the results; never for themselves (a constraint would
    // prove itself redundant). Without constraints, one e-graph serves every expression.
    let groups: Vec<(Vec<usize>, &[(Expr, Interval)])> = if m.constraints.is_empty() {
        vec![(picked, &[])]
    } else {
        let (res, cons): (Vec<usize>, Vec<usize>) = picked.into_iter().partition(|&i| i < nr);
        vec![(res, &m.constraints[..]), (cons, &[])]
    };
    let mut updates = Vec::new();
    for (picked, facts) in groups {
        if picked.is_empty() {
            continue;
        }
        let exprs: Vec<Expr> = picked.iter().map(|&i| all[i]).collect();
        // (the variables' names are read only by explain's steps)
        let names = if explain { m.names() } else { Vec::new() };
        let ctx = Group {
            bounds: &bounds,
            facts,
            names: &names,
            limits,
            point_vars: &point_vars,
            proven,
            memo,
        };
        let small = exprs
            .iter()
            .map(|&e| cost::expr_rank(e).2)
            .fold(0u64, u64::saturating_add)
            <= DIRECT_EXPLAIN_MAX;
        let new = if explain && small {
            // The steps of `simplify M explain`: the e-graph's own proof from the input when
            // it ends where `simplify M` does, else the pre-pass's rewrites each proven on
            // its own, then the e-graph's proof from there (the same map either way).
            let (plain, _) = ctx.rewrite(&exprs, false, &mut Vec::new());
            let mut direct = Vec::new();
            let (alone, report) =
                rewrite::rewrite_exprs(&exprs, &bounds, facts, &names, limits, true, &mut direct);
            if alone == plain {
                steps.extend(direct);
                saturated &= report.saturated;
                report.record(out);
                alone
            } else {
                let (new, report) = ctx.rewrite(&exprs, true, steps);
                saturated &= report.saturated;
                report.record(out);
                new
            }
        } else {
            // (past a few dozen nodes, the pre-pass's rewrites proven one by one: one egg
            // proof over a long chain of rewrites costs the cube of its length)
            let (new, report) = ctx.rewrite(&exprs, explain, steps);
            saturated &= report.saturated;
            report.record(out);
            new
        };
        updates.extend(picked.into_iter().zip(new));
    }
    for (i, e) in updates {
        // Where the constraints cannot all hold, the e-graph's classes may merge different
        // constants (every equation holds on an empty domain) and extraction may pick a zero
        // divisor: true there, but not a map anyone can print or read back. Such a form is
        // dropped; the constraint passes find the domain empty on their own or keep it.
        let old = all[i];
        if old.divisors_are_positive_constants() && !e.divisors_are_positive_constants() {
            continue;
        }
        if i < nr {
            m.results[i] = e;
        } else {
            m.constraints[i - nr].0 = e;
        }
    }
    saturated
}

/// An expression as the e-graph gets it: the parts of its top-level sum that are open
/// (each a sum of summands), and the rest, settled, kept aside.
struct Parts {
    open: Vec<Expr>,
    settled: Vec<Expr>,
}

impl Parts {
    /// The expression again, with the open parts replaced by `open` (in order).
    fn join(&self, open: &[Expr]) -> Expr {
        if self.settled.is_empty() && open.len() == 1 {
            return open[0];
        }
        let sum = open
            .iter()
            .chain(&self.settled)
            .fold(Expr::constant(0), |acc, &p| acc.add(p));
        crate::expr::canonical(sum)
    }
}

/// `e`'s top-level sum split into parts the e-graph may simplify on their own: summands
/// connected by a shared variable stay together (the rules that combine summands of a
/// sum, `add-collect`, `add-floordiv-to-mod` and `linearize-cancel`, only ever combine
/// summands over common variables; the rank is a sum over summands, so the cheapest sum
/// is the sum of the cheapest parts), and the parts the proof of done settles
/// (`done.rs`), the constant among them, are left out of the e-graph. `e` whole when it
/// does not split.
fn open_parts(e: Expr, settle: &done::Settle) -> Parts {
    let whole = Parts {
        open: vec![e],
        settled: Vec::new(),
    };
    let Some(l) = crate::expr::Linear::of(e) else {
        return whole;
    };
    // connected components of the summands by shared variables (masks merged until
    // disjoint; bit 63 stands for every variable past 62, which only merges more)
    let mut groups: Vec<(u64, Vec<(Expr, i64)>)> = Vec::new();
    for &(t, k) in &l.terms {
        let mut mask = t.var_mask();
        let mut members = vec![(t, k)];
        let mut i = 0;
        while i < groups.len() {
            if groups[i].0 & mask != 0 {
                let (m, ts) = groups.swap_remove(i);
                mask |= m;
                members.extend(ts);
                i = 0;
            } else {
                i += 1;
            }
        }
        groups.push((mask, members));
    }
    if groups.len() < 2 {
        return whole;
    }
    let mut parts = Parts {
        open: Vec::new(),
        settled: vec![Expr::constant(l.constant)],
    };
    // in the order of the first summand of each part, so the e-graph's input is stable
    for g in &mut groups {
        g.1.sort_by(|a, b| a.0.cmp(&b.0));
    }
    groups.sort_by(|a, b| a.1[0].0.cmp(&b.1[0].0));
    for (_, terms) in groups {
        let part = crate::expr::canonical(crate::expr::Linear { terms, constant: 0 }.to_expr());
        if settle.open(part).is_some() {
            parts.open.push(part);
        } else {
            parts.settled.push(part);
        }
    }
    parts
}

/// What one group of expressions (results under the constraints as facts, or the
/// constraints themselves) is simplified under.
struct Group<'a> {
    bounds: &'a [Interval],
    facts: &'a [(Expr, Interval)],
    names: &'a [String],
    limits: &'a SimplifyLimits,
    point_vars: &'a [bool],
    /// The expressions are what a saturated run extracted: the e-graph runs only on those
    /// the pre-pass changes.
    proven: bool,
    memo: &'a std::cell::RefCell<Memo>,
}

impl rewrite::RunReport {
    fn record(&self, out: &mut Simplified) {
        out.nodes = out.nodes.max(self.nodes);
        out.phases.add(&self.phases);
        if self.limit_hit.is_some() {
            out.limit_hit = self.limit_hit.clone();
        }
    }
}

impl Group<'_> {
    /// The steps of the pre-pass's rewrites (`fold::fold_all_traced`), each proven on its
    /// own (`rewrite::prove_step`). A node whose rewrite the rules do not prove from its
    /// rewritten operands is proven from the node as written instead, in place of its
    /// operands' steps (the pre-pass rewrote several levels at once there, through its
    /// floordiv basis).
    fn prove_fold_steps(&self, list: &[fold::FoldStep]) -> Vec<Step> {
        let prove = |before, after, node| {
            rewrite::prove_step(
                before,
                after,
                node,
                self.bounds,
                self.facts,
                self.names,
                self.limits,
            )
        };
        let unproven = |s: &[Step]| s.iter().any(|s| s.rule == rewrite::UNPROVEN);
        let mut per: Vec<Vec<Step>> = Vec::with_capacity(list.len());
        for (j, st) in list.iter().enumerate() {
            let mut out = prove(st.before, st.after, st.node);
            if unproven(&out) && st.node != st.before {
                let direct = prove(st.node, st.after, st.node);
                if !unproven(&direct) {
                    for p in per.iter_mut().take(j).skip(st.operands_from) {
                        p.clear();
                    }
                    out = direct;
                }
            }
            per.push(out);
        }
        per.into_iter().flatten().collect()
    }

    /// The deterministic pre-pass first (`fold.rs`), then the e-graph on what it leaves
    /// with a division or modulo the e-graph might still improve. The new expressions, in
    /// order (each the input itself when nothing ranked lower was found).
    fn rewrite(
        &self,
        exprs: &[Expr],
        explain: bool,
        steps: &mut Vec<Step>,
    ) -> (Vec<Expr>, rewrite::RunReport) {
        let t_fold = std::time::Instant::now();
        let settle = done::Settle::new(self.bounds, self.facts);
        // Where every expression has one division at most (weighs less than two) and the
        // first tier's proof of done settles it as it stands (`done.rs`: no rule of the
        // e-graph makes it cheaper), only the pre-pass's digit candidate is tried, which
        // changes basis beyond the rules (`(-d0 + 2) mod 3` is `-(d0 mod 3) + 2`, lighter
        // under the division). The walk's rules are those of the e-graph, and its basis
        // change of a sum (`recombine`) helps only where it removes a division outright,
        // which with a single division means the division is affine on the box: the proof
        // of done rules that out (one window, two values). With two divisions the basis
        // change does find forms the e-graph does not: `((bl_x * 32 + th_x) mod 96) * 64 +
        // (bl_x * 128 + th_x) floordiv 96` is done, and the walk writes it with one
        // division (transcript gpu/coalescing). Most small maps end here; the walk cost
        // as much as the rest of their simplification. (Not for explain: its steps come
        // from the walk.)
        let all_done = !explain
            && exprs
                .iter()
                .all(|&e| cost::expr_rank(e).0 < 2 * cost::DIV && settle.open(e).is_none());
        let known = self
            .limits
            .prepass
            .then(|| memo_find(&self.memo.borrow().fold, exprs, self.bounds, self.facts).cloned());
        // with explain, the pre-pass's own rewrites, node by node (`fold_all_traced`)
        let mut fold_steps: Vec<Vec<fold::FoldStep>> = Vec::new();
        let folded = if !self.limits.prepass {
            exprs.to_vec()
        } else if all_done {
            fold::digit_only(exprs, self.bounds, self.facts)
        } else if explain {
            let (f, st) = fold::fold_all_traced(exprs, self.bounds, self.facts);
            fold_steps = st;
            f
        } else if let Some(Some(f)) = known {
            f
        } else {
            let f = fold::fold_all(exprs, self.bounds, self.facts);
            let mut memo = self.memo.borrow_mut();
            if memo.fold.len() < MEMO_ENTRIES {
                memo.fold
                    .push((memo_key(exprs, self.bounds, self.facts), f.clone()));
            }
            f
        };
        let prepass_s = t_fold.elapsed().as_secs_f64();
        let mut new = exprs.to_vec();
        let mut rest = Vec::new();
        for (i, (&e, f)) in exprs.iter().zip(folded).enumerate() {
            // A partial result with divisions nested in dividends is not handed on: the
            // e-graph starts from the input itself there (its search from the input finds
            // forms the pre-pass's greedy basis change does not).
            if cost::expr_rank(f) < cost::expr_rank(e) && fold::is_flat(f) {
                if explain {
                    // each rewrite of the pre-pass proven on its own by the rules: the
                    // steps grow with the number of rewrites, not with the size of one
                    // proof over the whole expression
                    let list = fold_steps.get(i).map(|v| &v[..]).unwrap_or(&[]);
                    steps.extend(self.prove_fold_steps(list));
                }
                new[i] = f;
            }
            // the e-graph only where the first tier's proof of done fails (`done.rs`)
            if worth_rewriting(new[i], self.point_vars)
                && (!self.proven || new[i] != e)
                && !(all_done && new[i] == e)
                && settle.open(new[i]).is_some()
            {
                rest.push(i);
            }
        }
        if rest.is_empty() {
            let mut report = rewrite::RunReport {
                saturated: true,
                ..Default::default()
            };
            report.phases.prepass_s = prepass_s;
            return (new, report);
        }
        // Only the open parts go into the e-graph (`open_parts`): the settled summands
        // stay out of it, and each expression is put back together from its parts.
        let split: Vec<Parts> = rest.iter().map(|&i| open_parts(new[i], &settle)).collect();
        let input: Vec<Expr> = split.iter().flat_map(|p| p.open.iter().copied()).collect();
        let known = if explain {
            None
        } else {
            let memo = self.memo.borrow();
            memo.egraph
                .iter()
                .find(|(k, _, _)| k.0 == input && k.1 == self.bounds && k.2 == self.facts)
                .map(|(_, out, report)| {
                    // the same outcome, none of the work
                    let mut report = report.clone();
                    report.phases = rewrite::Phases::default();
                    (out.clone(), report)
                })
        };
        let (out, report) = match known {
            Some(k) => k,
            None => {
                let (out, report) = rewrite::rewrite_exprs(
                    &input,
                    self.bounds,
                    self.facts,
                    self.names,
                    self.limits,
                    explain,
                    steps,
                );
                let mut memo = self.memo.borrow_mut();
                if !explain && memo.egraph.len() < MEMO_ENTRIES {
                    let key = memo_key(&input, self.bounds, self.facts);
                    memo.egraph.push((key, out.clone(), report.clone()));
                }
                (out, report)
            }
        };
        let mut outs = out.into_iter();
        for (i, parts) in rest.into_iter().zip(split) {
            let open: Vec<Expr> = outs.by_ref().take(parts.open.len()).collect();
            let e = parts.join(&open);
            // (each part's output is never ranked above its input, so neither is the sum)
            if cost::expr_rank(e) < cost::expr_rank(new[i]) {
                new[i] = e;
            }
        }
        let mut report = report;
        report.phases.prepass_s += prepass_s;
        (new, report)
    }
}
