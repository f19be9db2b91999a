//! The deterministic pre-pass: one bottom-up walk over an expression that applies the
//! e-graph's own proven identities (`rules/*.rs`, `tests/smt/rules.py`) in a fixed order,
//! each only where it makes the expression cheaper, so that most maps (the reshape and
//! bitcast chains above all) reach their linear form without saturation. The e-graph then
//! runs only on what still has a division or a modulo it might improve (`mod.rs`).
//!
//! The one idea beyond local rewriting is the *floordiv basis* for sums: every summand
//! `k·(Y mod m)` is written `k·Y - k·m·(Y floordiv m)` (the basis change of
//! `add-floordiv-to-mod`), nested quotients are fused (`floordiv-nested`,
//! `floordiv-nested-sum`), like terms collected, and what remains is folded back into
//! `mod` form where a pair `k·Y - k·m·(Y floordiv m)` appears (again `add-floordiv-to-mod`,
//! with `floordiv-nested` to see `X floordiv 12` as `(X floordiv 4) floordiv 3`). A
//! delinearize-relinearize pair cancels in that basis without any search:
//!
//! ```text
//! X = d0 * 32 + d1
//! (X floordiv 64) * 64 + ((X floordiv 4) mod 16) * 4 + X mod 4
//!   = 64·(X fd 64) + 4·(X fd 4) - 64·(X fd 64) + X - 4·(X fd 4)      (floordiv basis)
//!   = X
//! ```
//!
//! Beside that pass, each expression also gets a *digit candidate* (the second half of this
//! file): the whole expression in the quotient basis `Σ k·(b floordiv p)`, divisions split
//! digit by digit over the mixed-radix digits of each base, printed per base in the cheaper
//! of the quotient and the digit form; reshape and transpose chains come out flat and with
//! one division per digit boundary instead of a quotient and a remainder:
//!
//! ```text
//! (d2 mod 2) * 6 + d0 * 2 + d2 floordiv 2,  d2 in [0, 3]   =>   d2 * 6 + d0 * 2 - (d2 floordiv 2) * 11
//! ```
//!
//! It replaces the pass's result only when lighter (`lighter`: weight, then weight under
//! divisions).
//!
//! Every step is an instance of an identity the e-graph uses (named at each step), with
//! the same side conditions read from the same facts: intervals over the variable bounds
//! (and the map's constraints, as the e-graph reads them), congruences (`congruence.rs`).
//! A candidate replaces a subterm only when its [`expr_rank`] is lower, so the pass never
//! makes an expression dearer; its work is bounded by counts, never by time.

use super::congruence::Congruence;
use super::cost::expr_rank;
use super::rules::modulo::least_residue;
use super::rules::remainder_factors;
use crate::expr::arith::{floor_div, modulo};
use crate::expr::linear::Linear;
use crate::expr::{canonical, Expr, ExprKind, Op};
use crate::interval::Interval;
use fxhash::FxHashMap as HashMap;
use std::rc::Rc;

/// Most candidate rewrites one [`fold`] may build (a bound on work, by count; reaching it
/// only stops the pass early, the expression so far is still equal to the input).
const MAX_STEPS: usize = 20_000;

/// The pre-pass over `e` under the variable `bounds` and the constraint `facts` (`e in iv`:
/// every subterm equal, in canonical form, to a fact's expression lies in its interval).
/// Returns an expression equal to `e` at every point of the domain, in canonical form,
/// never ranked above `canonical(e)`.
pub fn fold(e: Expr, bounds: &[Interval], facts: &[(Expr, Interval)]) -> Expr {
    fold_all(&[e], bounds, facts)[0]
}

/// [`fold`] of each expression, sharing the work on common subterms.
pub fn fold_all(exprs: &[Expr], bounds: &[Interval], facts: &[(Expr, Interval)]) -> Vec<Expr> {
    let mut f = Folder::new(bounds, facts);
    exprs
        .iter()
        .map(|&e| {
            let start = canonical(e);
            let out = f.expr(start);
            let out = if expr_rank(out) < expr_rank(start) {
                out
            } else {
                start
            };
            // the digit candidate, where it is cheaper still: lighter, or as heavy with
            // less weight under the divisions (not on the rank's tie-breaks alone: a
            // different spelling of an equally heavy form is churn, not progress)
            if !f.digit_may_be_lighter(out) {
                return out;
            }
            match f.digit_candidate(start) {
                Some(d) if lighter(expr_rank(d), expr_rank(out)) => d,
                _ => out,
            }
        })
        .collect()
}

/// [`fold_all`] for expressions the proof of done settles (`done.rs`: no rule of the
/// e-graph, so no step of the bottom-up walk, makes them cheaper): the walk is skipped and
/// each expression (canonical) gets only the digit candidate, where it is lighter.
pub fn digit_only(exprs: &[Expr], bounds: &[Interval], facts: &[(Expr, Interval)]) -> Vec<Expr> {
    let mut f = Folder::new(bounds, facts);
    exprs
        .iter()
        .map(|&e| {
            let start = canonical(e);
            if !f.digit_may_be_lighter(start) {
                return start;
            }
            match f.digit_candidate(start) {
                Some(d) if lighter(expr_rank(d), expr_rank(start)) => d,
                _ => start,
            }
        })
        .collect()
}

/// One rewrite of the pre-pass, as [`fold_all_traced`] reports it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FoldStep {
    /// The node with its operands already rewritten.
    pub before: Expr,
    /// What the pass made of it.
    pub after: Expr,
    /// The node as written (a proof may read its subterms; `node => after` directly
    /// replaces the steps of its operands, `operands_from..` of the list, and this one).
    pub node: Expr,
    pub operands_from: usize,
}

/// [`fold_all`], with the way each expression got there: per expression, the rewrites of
/// single nodes, bottom-up, that turn it into its folded form (`(before, after, node)`:
/// the node with its operands already rewritten, what the pass made of it, and the node
/// as it was, which the proof may read; applying them in order, each to every occurrence
/// of its `before`, gives the output). `simplify M
/// explain` proves each one on its own (`rewrite::prove_step`), so its cost grows with the
/// number of rewrites, not with the size of one proof over the whole expression.
pub fn fold_all_traced(
    exprs: &[Expr],
    bounds: &[Interval],
    facts: &[(Expr, Interval)],
) -> (Vec<Expr>, Vec<Vec<FoldStep>>) {
    let mut f = Folder::new(bounds, facts);
    let mut seen = std::collections::HashSet::new();
    exprs
        .iter()
        .map(|&e| {
            let mut steps = Vec::new();
            let start = canonical(e);
            if start != e {
                steps.push(FoldStep {
                    before: e,
                    after: start,
                    node: e,
                    operands_from: 0,
                });
            }
            let out = f.expr(start);
            let out = if expr_rank(out) < expr_rank(start) {
                f.node_steps(start, &mut seen, &mut steps);
                out
            } else {
                start
            };
            let fin = match f
                .digit_may_be_lighter(out)
                .then(|| f.digit_candidate(start))
                .flatten()
            {
                Some(d) if lighter(expr_rank(d), expr_rank(out)) => d,
                _ => out,
            };
            if fin != out {
                steps.push(FoldStep {
                    before: out,
                    after: fin,
                    node: start,
                    operands_from: steps.len(),
                });
            }
            (fin, steps)
        })
        .unzip()
}

/// Whether rank `a` is below `b` in weight, or in the weight under divisions at equal
/// weight (the first two components of [`super::cost::Rank`]).
fn lighter(a: super::cost::Rank, b: super::cost::Rank) -> bool {
    (a.0, a.1) < (b.0, b.1)
}

struct Folder<'a> {
    bounds: &'a [Interval],
    facts: HashMap<Expr, Interval>,
    memo: HashMap<Expr, Expr>,
    info: HashMap<Expr, (Interval, Congruence)>,
    steps: usize,
    /// The digit candidate's memo (`None`: no quotient-basis form) and its opaque bases.
    qmemo: HashMap<Expr, Option<QSum>>,
    base_ranges: HashMap<Expr, Interval>,
    qsteps: usize,
    /// Quotients found digit by digit: `T -> (S, p)` where `T = S fd p`, so that a later
    /// `T fd c` that does not split is `S fd (p·c)` (floordiv-nested), one base for both.
    slices: HashMap<QSum, (QSum, i64)>,
    /// The divisions `qfd` is inside of.
    qstack: Vec<(QSum, i64)>,
    /// Each opaque base's own sum.
    base_sums: HashMap<Expr, QSum>,
    /// [`Folder::expanded`]'s memo: per summand and depth, its parts (`None`: expand
    /// fails there) and the budget steps they took.
    expansions: HashMap<(Expr, usize), (Option<Rc<Expanded>>, usize)>,
}

/// What `expand` adds for one summand (`Folder::expanded`): for `Y mod m`, `Y` expanded
/// and `Y fd m` reduced (added as `k·Y - k·m·(Y fd m)`); for a quotient, itself reduced.
enum Expanded {
    Mod(Linear, Linear, i64),
    Fd(Linear),
}

thread_local! {
    /// [`Linear::of`] of the expressions one pass has read (a pure function of the
    /// expression; the pass reads the same dividends over and over on reshape chains,
    /// where `Linear::of` was a third of its time). Cleared by [`Folder::new`].
    /// (Shared, not copied out: a copy was an allocation per read, and most reads only
    /// borrow the form.)
    static LINEAR: std::cell::RefCell<HashMap<Expr, Option<Rc<Linear>>>> = Default::default();
}

/// The tables of a [`Folder`] that every pass fills (the walk's memo, the facts of each
/// subterm, the digit candidate's memo), kept on the thread between passes, empty but
/// with their room: a small map's pass grew each of them from nothing, rehashing at
/// every doubling, which cost more than the inserts themselves.
#[derive(Default)]
struct Tables {
    memo: HashMap<Expr, Expr>,
    info: HashMap<Expr, (Interval, Congruence)>,
    qmemo: HashMap<Expr, Option<QSum>>,
}

thread_local! {
    static TABLES: std::cell::RefCell<Option<Tables>> = Default::default();
}

/// Empties `m` for the next pass; a large table (a reshape chain's) is dropped rather than
/// kept and walked by every small pass after it.
fn emptied<K, V>(m: &mut HashMap<K, V>) {
    if m.capacity() > 256 {
        *m = HashMap::default();
    } else {
        m.clear();
    }
}

impl Drop for Folder<'_> {
    fn drop(&mut self) {
        let mut t = Tables {
            memo: std::mem::take(&mut self.memo),
            info: std::mem::take(&mut self.info),
            qmemo: std::mem::take(&mut self.qmemo),
        };
        emptied(&mut t.memo);
        emptied(&mut t.info);
        emptied(&mut t.qmemo);
        TABLES.with(|x| *x.borrow_mut() = Some(t));
    }
}

fn lin(e: Expr) -> Option<Rc<Linear>> {
    if let Some(l) = LINEAR.with(|m| m.borrow().get(&e).cloned()) {
        return l;
    }
    let l = Linear::of(e).map(Rc::new);
    LINEAR.with(|m| m.borrow_mut().insert(e, l.clone()));
    l
}

fn atom(e: Expr) -> Linear {
    Linear {
        terms: vec![(e, 1)],
        constant: 0,
    }
}

/// `a + k·b`; `None` on overflow. Both term lists are in structural order (as every
/// `Linear` is), so one merge collects them.
fn add_scaled(a: &Linear, b: &Linear, k: i64) -> Option<Linear> {
    let mut terms = Vec::with_capacity(a.terms.len() + b.terms.len());
    let (mut i, mut j) = (0, 0);
    while i < a.terms.len() || j < b.terms.len() {
        let ord = match (a.terms.get(i), b.terms.get(j)) {
            (Some(x), Some(y)) => x.0.cmp(&y.0),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match ord {
            std::cmp::Ordering::Less => {
                terms.push(a.terms[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                let (t, c) = b.terms[j];
                terms.push((t, c.checked_mul(k)?));
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                let (t, c) = a.terms[i];
                terms.push((t, c.checked_add(b.terms[j].1.checked_mul(k)?)?));
                i += 1;
                j += 1;
            }
        }
    }
    terms.retain(|&(_, c)| c != 0);
    Some(Linear {
        terms,
        constant: a.constant.checked_add(b.constant.checked_mul(k)?)?,
    })
}

/// `l + k·t` in place (`add_scaled(l, atom(t), k)` without the two vectors it built);
/// `None` on overflow (`l` is then to be dropped, as `add_scaled`'s caller drops it).
fn add_atom(l: &mut Linear, t: Expr, k: i64) -> Option<()> {
    if k == 0 {
        return Some(());
    }
    match l.terms.binary_search_by(|x| x.0.cmp(&t)) {
        Ok(i) => {
            let c = l.terms[i].1.checked_add(k)?;
            if c == 0 {
                l.terms.remove(i);
            } else {
                l.terms[i].1 = c;
            }
        }
        Err(i) => l.terms.insert(i, (t, k)),
    }
    Some(())
}

/// `l + v` (`add_scaled(&l, &Linear::constant(v), 1)` without a copy of the terms).
fn plus_const(mut l: Linear, v: i64) -> Option<Linear> {
    l.constant = l.constant.checked_add(v)?;
    Some(l)
}

fn scaled(a: &Linear, k: i64) -> Option<Linear> {
    add_scaled(&Linear::constant(0), a, k)
}

/// `(x, c)` when `e` is `x op c` with `c > 0` a constant.
fn div_by(e: Expr, op: Op) -> Option<(Expr, i64)> {
    match e.kind() {
        ExprKind::Bin(o, x, c) if o == op => c.as_const().filter(|&c| c > 0).map(|c| (x, c)),
        _ => None,
    }
}

/// Whether every division in `e` has a dividend without a division, but for the
/// digit-extraction form `(x floordiv c) mod m` with `x` division-free: the forms the
/// pre-pass is trusted to hand on (`mod.rs` gives the e-graph the input itself otherwise).
pub fn is_flat(e: Expr) -> bool {
    match e.kind() {
        ExprKind::Bin(op, a, b) if op.is_div_like() => {
            if !a.has_div() {
                return true;
            }
            op == Op::Mod
                && matches!(a.kind(), ExprKind::Bin(Op::FloorDiv, x, _) if !x.has_div())
                && !b.has_div()
        }
        ExprKind::Bin(_, a, b) => is_flat(a) && is_flat(b),
        _ => true,
    }
}

/// The distinct `(dividend, divisor)` pairs of the floordiv and mod nodes of `e`
/// (`x floordiv c` and `x mod c` count once together).
fn division_pairs(e: Expr) -> fxhash::FxHashSet<(Expr, Expr, bool)> {
    // (each shared subterm walked once: the pairs are the same)
    fn walk(
        e: Expr,
        seen: &mut fxhash::FxHashSet<(Expr, Expr, bool)>,
        visited: &mut fxhash::FxHashSet<Expr>,
    ) {
        if let ExprKind::Bin(op, a, b) = e.kind() {
            if !e.has_div() || !visited.insert(e) {
                return;
            }
            if op.is_div_like() {
                seen.insert((a, b, op == Op::CeilDiv));
            }
            walk(a, seen, visited);
            walk(b, seen, visited);
        }
    }
    let mut seen = Default::default();
    walk(e, &mut seen, &mut Default::default());
    seen
}

fn gcd(a: i64, b: i64) -> i64 {
    super::rules::gcd(a, b)
}

impl<'a> Folder<'a> {
    fn new(bounds: &'a [Interval], facts: &[(Expr, Interval)]) -> Folder<'a> {
        LINEAR.with(|m| {
            let mut m = m.borrow_mut();
            // (a large table dropped rather than walked, as the canonical memo's)
            if m.capacity() > 256 {
                *m = Default::default();
            } else {
                m.clear();
            }
        });
        let mut map: HashMap<Expr, Interval> = HashMap::default();
        for &(e, iv) in facts {
            let c = canonical(e);
            let slot = map.entry(c).or_insert(Interval::FULL);
            *slot = slot.intersect(&iv);
        }
        let tables = TABLES.with(|x| x.borrow_mut().take()).unwrap_or_default();
        Folder {
            bounds,
            facts: map,
            memo: tables.memo,
            info: tables.info,
            steps: 0,
            qmemo: tables.qmemo,
            base_ranges: HashMap::default(),
            qsteps: 0,
            slices: HashMap::default(),
            qstack: Vec::new(),
            base_sums: HashMap::default(),
            expansions: HashMap::default(),
        }
    }

    fn budget(&mut self) -> bool {
        self.steps += 1;
        self.steps <= MAX_STEPS
    }

    /// Interval and congruence of `e` (as the e-graph's analysis computes them for a node
    /// whose children have these facts), narrowed by a constraint on `e` itself.
    fn info(&mut self, e: Expr) -> (Interval, Congruence) {
        if let Some(&i) = self.info.get(&e) {
            return i;
        }
        let (r, g) = match e.kind() {
            ExprKind::Const(c) => (Interval::point(c), Congruence::exact(c)),
            ExprKind::Var(v) => (
                self.bounds
                    .get(v as usize)
                    .copied()
                    .unwrap_or(Interval::FULL),
                Congruence::TOP,
            ),
            ExprKind::Bin(op, a, b) => {
                let (ra, ga) = self.info(a);
                let (rb, gb) = self.info(b);
                (Interval::apply(op, &ra, &rb), Congruence::apply(op, ga, gb))
            }
        };
        let r = match self.facts.get(&e) {
            Some(f) => r.intersect(f),
            None => r,
        };
        let r = g.snap(r);
        let g = if r.is_point() && !r.is_empty() {
            Congruence::exact(r.lo)
        } else {
            g
        };
        self.info.insert(e, (r, g));
        (r, g)
    }

    fn range(&mut self, l: &Linear) -> Interval {
        let e = l.to_expr();
        self.info(e).0
    }

    /// The one value of the atom `t`, if its range is a point.
    fn point_of(&mut self, t: Expr) -> Option<i64> {
        let r = self.info(t).0;
        (!r.is_empty() && r.is_point()).then_some(r.lo)
    }

    /// The node rewrites that took `e` to its memoized folded form, bottom-up (see
    /// [`fold_all_traced`]); nodes in `seen` are done already (shared subterms). An
    /// explicit stack: no recursion on the depth of the term.
    fn node_steps(
        &self,
        e: Expr,
        seen: &mut std::collections::HashSet<Expr>,
        steps: &mut Vec<FoldStep>,
    ) {
        let mut said = std::collections::HashSet::new();
        // (node, operands done, where its operands' steps start)
        let mut stack = vec![(e, false, 0)];
        while let Some((x, ready, from)) = stack.pop() {
            let Some(&fx) = self.memo.get(&x) else {
                continue;
            };
            if fx == x || (!ready && !seen.insert(x)) {
                continue;
            }
            match x.kind() {
                ExprKind::Bin(op, a, b) => {
                    if !ready {
                        stack.push((x, true, steps.len()));
                        stack.push((b, false, 0));
                        stack.push((a, false, 0));
                        continue;
                    }
                    let fa = self.memo.get(&a).copied().unwrap_or(a);
                    let fb = self.memo.get(&b).copied().unwrap_or(b);
                    let mid = Expr::bin(op, fa, fb);
                    // (a rewrite met again, `0 floordiv 2 => 0` up a chain, is said once)
                    if mid != fx && said.insert((mid, fx)) {
                        steps.push(FoldStep {
                            before: mid,
                            after: fx,
                            node: x,
                            operands_from: from,
                        });
                    }
                }
                _ if said.insert((x, fx)) => steps.push(FoldStep {
                    before: x,
                    after: fx,
                    node: x,
                    operands_from: steps.len(),
                }),
                _ => {}
            }
        }
    }

    /// The folded form of a canonical expression.
    fn expr(&mut self, e: Expr) -> Expr {
        if let Some(&f) = self.memo.get(&e) {
            return f;
        }
        let out = self.expr_uncached(e);
        let out = if expr_rank(out) < expr_rank(e) {
            out
        } else {
            e
        };
        self.memo.insert(e, out);
        out
    }

    fn expr_uncached(&mut self, e: Expr) -> Expr {
        let folded = match e.kind() {
            ExprKind::Const(_) => return e,
            ExprKind::Var(v) => {
                // a variable bounded to one point is that constant (`interval-constant`)
                let b = self
                    .bounds
                    .get(v as usize)
                    .copied()
                    .unwrap_or(Interval::FULL);
                return if b.is_point() && !b.is_empty() {
                    Expr::constant(b.lo)
                } else {
                    e
                };
            }
            ExprKind::Bin(op @ (Op::Add | Op::Mul), a, b) => {
                let (fa, fb) = (self.expr(a), self.expr(b));
                let Some(l) = lin(Expr::bin(op, fa, fb)) else {
                    return e;
                };
                let r = self.recombine(&l).to_expr();
                match (op == Op::Add)
                    .then(|| self.remainder_as_written(e))
                    .flatten()
                {
                    Some(alt) if expr_rank(alt) < expr_rank(r) => alt,
                    _ => r,
                }
            }
            ExprKind::Bin(op @ (Op::FloorDiv | Op::Mod), a, b) => {
                let (fa, fb) = (self.expr(a), self.expr(b));
                match (fb.as_const().filter(|&c| c > 0), lin(fa)) {
                    (Some(c), Some(la)) => {
                        let r = if op == Op::FloorDiv {
                            self.floordiv(&la, c)
                        } else {
                            self.modulo(&la, c)
                        };
                        match r {
                            Some(r) => r.to_expr(),
                            None => canonical(Expr::bin(op, fa, fb)),
                        }
                    }
                    _ => canonical(Expr::bin(op, fa, fb)),
                }
            }
            ExprKind::Bin(op, a, b) => {
                let (fa, fb) = (self.expr(a), self.expr(b));
                canonical(Expr::bin(op, fa, fb))
            }
        };
        // interval-constant: a subterm with one value is that value
        let (r, _) = self.info(folded);
        if r.is_point() && !r.is_empty() {
            return Expr::constant(r.lo);
        }
        folded
    }

    /// `a floordiv c` (`c > 0`), as a linear form over canonical atoms.
    /// With `reduce`, every coefficient is brought into `[0, c - 1]` (`k·t = c·q·t + r·t`,
    /// then `floordiv-split-multiples`): the floordiv basis of a sum compares quotients in
    /// that form, so `(d0 * 120 + X) floordiv 48` meets `d0 * 2 + (d0 * 24 + X) floordiv 48`.
    fn floordiv(&mut self, a: &Linear, c: i64) -> Option<Linear> {
        self.floordiv_in(a, c, false)
    }

    fn floordiv_in(&mut self, a: &Linear, c: i64, reduce: bool) -> Option<Linear> {
        let mut a = a.clone();
        let mut c = c;
        let mut out = Linear::constant(0);
        for _ in 0..64 {
            if !self.budget() {
                return None;
            }
            if c == 1 {
                // floordiv-one
                return add_scaled(&out, &a, 1);
            }
            // interval-constant: the dividend lies within one multiple of c
            let r = self.range(&a);
            if !r.is_empty() && !r.is_full() && floor_div(r.lo, c) == floor_div(r.hi, c) {
                return plus_const(out, floor_div(r.lo, c));
            }
            // floordiv-split-multiples: (c·A + B + k) fd c = A + k fd c + (B + k mod c) fd c
            let mut moved = false;
            let mut rest = Linear::constant(modulo(a.constant, c));
            out.constant = out.constant.checked_add(floor_div(a.constant, c))?;
            moved |= floor_div(a.constant, c) != 0;
            for &(t, k) in &a.terms {
                // k = q·c + r: q·t leaves the division, r·t stays (r = 0 or k without reduce)
                let (q, r) = match (reduce, k % c == 0) {
                    (_, true) => (k / c, 0),
                    (true, false) => (floor_div(k, c), modulo(k, c)),
                    (false, false) => (0, k),
                };
                if q != 0 {
                    add_atom(&mut out, t, q)?;
                    moved = true;
                }
                if r != 0 {
                    rest.terms.push((t, r));
                }
            }
            a = rest;
            if moved {
                continue;
            }
            // floordiv-nested-sum / floordiv-nested: a summand B fd c' with coefficient 1:
            // (A + B fd c') fd c = (c'·A + B) fd (c'·c)
            let inner = a.terms.iter().find_map(|&(t, k)| {
                (k == 1).then(|| div_by(t, Op::FloorDiv).map(|(b, c2)| (t, b, c2)))?
            });
            if let Some((t, b, c2)) = inner {
                let (Some(cc), Some(lb)) = (c2.checked_mul(c), lin(b)) else {
                    break;
                };
                let without = add_scaled(&a, &atom(t), -1)?;
                let Some(fused) = scaled(&without, c2).and_then(|s| add_scaled(&s, &lb, 1)) else {
                    break;
                };
                a = fused;
                c = cc;
                continue;
            }
            // floordiv-small-remainder: (g·A + B) fd c = A fd (c / g), 0 <= B <= g - 1
            //   (a common factor alone, B = 0, is cancelled only inside the floordiv basis:
            //   `(d0 * -2 - d1 * 2) floordiv 6` kept whole folds with its sum into
            //   `(d0 * -2 - d1 * 2) mod 6`, lighter than `((-d0 - d1) mod 3) * 2`)
            if let Some((g, a2, b)) = self.small_remainder_split(&a, c) {
                if reduce || !b.terms.is_empty() || b.constant != 0 {
                    a = a2;
                    c /= g;
                    continue;
                }
            }
            // floordiv-of-mod: (x mod m) fd c = (x fd c) mod (m / c) when c divides m
            if a.constant == 0 && a.terms.len() == 1 && a.terms[0].1 == 1 {
                if let Some((x, m)) = div_by(a.terms[0].0, Op::Mod) {
                    if m % c == 0 {
                        let lx = lin(x)?;
                        let q = self.floordiv(&lx, c)?;
                        let r = self.modulo(&q, m / c)?;
                        return add_scaled(&out, &r, 1);
                    }
                }
            }
            break;
        }
        if a.terms.is_empty() {
            let v = floor_div(a.constant, c);
            return plus_const(out, v);
        }
        let t = Expr::bin(Op::FloorDiv, a.to_expr(), Expr::constant(c));
        match self.point_of(t) {
            Some(v) => plus_const(out, v),
            None => {
                let mut out = out;
                add_atom(&mut out, t, 1)?;
                Some(out)
            }
        }
    }

    /// `(g, A, B)` with `a = g·A + B`, `g` dividing `c` and every value of B in
    /// `[0, g - 1]` (the largest such g among the gcds of the coefficients with c), as
    /// `split_small_remainder` in `rules.rs`.
    fn small_remainder_split(&mut self, a: &Linear, c: i64) -> Option<(i64, Linear, Linear)> {
        for g in remainder_factors(a.terms.iter().map(|&(_, k)| k), c) {
            let r0 = modulo(a.constant, g);
            let mut big = Linear::constant(a.constant.checked_sub(r0)? / g);
            let mut small = Linear::constant(r0);
            for &(t, k) in &a.terms {
                if k % g == 0 {
                    big.terms.push((t, k / g));
                } else {
                    small.terms.push((t, k));
                }
            }
            if Interval::new(0, g - 1).contains_interval(&self.range(&small)) {
                return Some((g, big, small));
            }
        }
        None
    }

    /// `a mod c` (`c > 0`), as a linear form over canonical atoms: the cheaper of the
    /// dividend as given and with its coefficients reduced (the e-graph keeps both forms
    /// and extraction picks: `(d0 * 8 + d1) mod 5` over `(d1 - d0 * 2) mod 5`).
    fn modulo(&mut self, a: &Linear, c: i64) -> Option<Linear> {
        let mut differs = false;
        let reduced = self.modulo_in(a, c, true, &mut differs)?;
        if !differs {
            // every coefficient is its own least residue: the dividend as given is the
            // reduced one, and so is all that follows from it (the same result again)
            return Some(reduced);
        }
        let Some(given) = self.modulo_in(a, c, false, &mut differs) else {
            return Some(reduced);
        };
        if expr_rank(given.to_expr()) <= expr_rank(reduced.to_expr()) {
            Some(given)
        } else {
            Some(reduced)
        }
    }

    /// With `residues`, every coefficient is replaced by its least residue modulo c;
    /// without, only multiples of c are dropped.
    /// `differs` is set when the residues change a coefficient that the form as given
    /// keeps (only then do the two forms differ).
    fn modulo_in(
        &mut self,
        a: &Linear,
        c: i64,
        residues: bool,
        differs: &mut bool,
    ) -> Option<Linear> {
        if !self.budget() {
            return None;
        }
        if c == 1 {
            return Some(Linear::constant(0)); // mod-one
        }
        // mod-drop-multiples, mod-congruent-term, mod-inner-mod: terms a multiple of c
        // apart from a smaller one
        let mut out = Linear::constant(modulo(a.constant, c));
        for &(t, k) in &a.terms {
            let g = self.info(t).1;
            if g.m > 1 && k % c != 0 && k.checked_mul(g.m).is_some_and(|km| km % c == 0) {
                out.constant = modulo(out.constant.checked_add(modulo(k.checked_mul(g.r)?, c))?, c);
                continue;
            }
            if let Some((x, m)) = div_by(t, Op::Mod) {
                if k.checked_mul(m).is_some_and(|km| km % c == 0) {
                    out = add_scaled(&out, &*lin(x)?, k)?;
                    continue;
                }
            }
            add_atom(&mut out, t, k)?;
        }
        // the residues (again: inner-mod may have brought in large coefficients)
        let mut a = Linear::constant(modulo(out.constant, c));
        for &(t, k) in &out.terms {
            let as_given = if k % c == 0 { 0 } else { k };
            let r = if residues {
                let r = least_residue(k, c);
                *differs |= r != as_given;
                r
            } else {
                as_given
            };
            if r != 0 {
                a.terms.push((t, r));
            }
        }
        if a.terms.is_empty() {
            return Some(Linear::constant(a.constant));
        }
        // mod-in-range: a mod c = a - q·c when every value of a is in [q·c, q·c + c - 1]
        let r = self.range(&a);
        if !r.is_empty() && !r.is_full() && floor_div(r.lo, c) == floor_div(r.hi, c) {
            let q = floor_div(r.lo, c);
            return plus_const(a, q.checked_mul(c)?.checked_mul(-1)?);
        }
        // mod-nested: (x mod m) mod c = x mod c when c divides m
        if a.constant == 0 && a.terms.len() == 1 && a.terms[0].1 == 1 {
            if let Some((x, m)) = div_by(a.terms[0].0, Op::Mod) {
                if m % c == 0 {
                    return self.modulo(&*lin(x)?, c);
                }
            }
        }
        // mod-small-remainder: (g·A + B) mod c = g·(A mod (c / g)) + B, 0 <= B <= g - 1
        let t = Expr::bin(Op::Mod, a.to_expr(), Expr::constant(c));
        if let Some(v) = self.point_of(t) {
            return Some(Linear::constant(v));
        }
        // mod-small-remainder, where it is cheaper than the mod as it stands
        // (`(d0 * -2) mod 6` stays: `((-d0) mod 3) * 2` weighs more)
        if let Some((g, big, small)) = self.small_remainder_split(&a, c) {
            let inner = self.modulo(&big, c / g)?;
            let split = add_scaled(&small, &inner, g)?;
            if expr_rank(split.to_expr()) < expr_rank(t) {
                return Some(split);
            }
        }
        Some(atom(t))
    }

    /// `add-floordiv-to-mod` on the sum `e` as written, before its summands are folded:
    /// `k·X - k·c·(X fd c) + R = k·(X mod c) + R` (the atoms of `k·X` all in the sum), then
    /// folded. Folding the summands first can hide the pair: `floordiv-small-remainder`
    /// takes the factor 2 out of `(d0 * -2 - 5) floordiv 6` (`(-d0) floordiv 3 - 1`,
    /// lower in rank alone), after which the sum folds only to `((-d0) mod 3) * 2 - 1`
    /// (37), dearer than `(d0 * -2 + 1) mod 6 - 2` (36) from the sum as written; the
    /// e-graph, started from the folded form, has no rule back.
    fn remainder_as_written(&mut self, e: Expr) -> Option<Expr> {
        let l = lin(e)?;
        for &(t, q) in &l.terms {
            let Some((x, c)) = div_by(t, Op::FloorDiv) else {
                continue;
            };
            if q % c != 0 || !self.budget() {
                continue;
            }
            // checked: q = -2^63 (or q / c) has no negation in 64 bits
            let Some(k) = (q / c).checked_neg() else {
                continue;
            };
            let Some(lx) = lin(x) else { continue };
            let Some(rest) = q
                .checked_neg()
                .and_then(|nq| add_scaled(&l, &atom(t), nq))
                .and_then(|r| add_scaled(&r, &lx, k.checked_neg()?))
            else {
                continue;
            };
            if rest
                .terms
                .iter()
                .any(|u| !l.terms.iter().any(|v| v.0 == u.0))
            {
                continue;
            }
            let m = Expr::bin(Op::Mod, x, Expr::constant(c));
            let out = add_scaled(&rest, &atom(m), k)?;
            return Some(self.expr(canonical(out.to_expr())));
        }
        None
    }

    /// A sum, in the floordiv basis and back; the cheaper of that and `l` itself.
    fn recombine(&mut self, l: &Linear) -> Linear {
        let has_mod = l.terms.iter().any(|&(t, _)| div_by(t, Op::Mod).is_some());
        let has_fd = l
            .terms
            .iter()
            .any(|&(t, _)| div_by(t, Op::FloorDiv).is_some());
        if !has_mod && !has_fd {
            return l.clone();
        }
        let Some(e) = self.expand(l, 0) else {
            return l.clone();
        };
        let Some(r) = self.refold(e) else {
            return l.clone();
        };
        // Only when the basis change removed a division outright: fewer distinct
        // (dividend, divisor) pairs. A quotient and a remainder of the same pair are one
        // division to a reader and to hardware, so `(d0 floordiv 8) * 4 + d0 mod 8` stays
        // as written rather than `d0 - (d0 floordiv 8) * 4`; the e-graph decides those.
        // And only divisions the sum had: a basis change that leaves a new quotient
        // (`((d0 mod 2) * 764 + d0 * 4 - ...) floordiv 32`) is left to the e-graph.
        // (the rank first: read off the nodes, where the pairs are two walks and two sets)
        let (re, le) = (r.to_expr(), l.to_expr());
        if expr_rank(re) >= expr_rank(le) {
            return l.clone();
        }
        let (pr, pl) = (division_pairs(re), division_pairs(le));
        if pr.len() < pl.len() && pr.is_subset(&pl) {
            r
        } else {
            l.clone()
        }
    }

    /// `l` with every `Y mod m` summand written `Y - m·(Y fd m)` (and the same inside Y),
    /// every quotient with its coefficients reduced.
    fn expand(&mut self, l: &Linear, depth: usize) -> Option<Linear> {
        if depth > 8 || !self.budget() {
            return None;
        }
        let mut out = Linear::constant(l.constant);
        for &(t, k) in &l.terms {
            if div_by(t, Op::Mod).is_none() && div_by(t, Op::FloorDiv).is_none() {
                add_atom(&mut out, t, k)?;
                continue;
            }
            match &*self.expanded(t, depth)? {
                Expanded::Mod(ly, q, m) => {
                    out = add_scaled(&out, ly, k)?;
                    out = add_scaled(&out, q, k.checked_mul(*m)?.checked_neg()?)?;
                }
                Expanded::Fd(q) => out = add_scaled(&out, q, k)?,
            }
        }
        Some(out)
    }

    /// The parts [`Self::expand`] adds for one summand `t`, a `Y mod m` or a quotient,
    /// at `depth`, memoized: the walk recombines every prefix of a sum (each is a node of
    /// its own), so the summands of a sum of n were expanded n times over, each a
    /// recursion through floordiv_in, where reshape maps spent a fifth of their time.
    /// Exact: a memoized expansion took `used` steps of the budget, none refused (the
    /// count never went past [`MAX_STEPS`]); from a count at which those same steps are
    /// all granted again, the computation would return the same (it reads only pure
    /// memos besides), so the count moves on by `used` and the same parts are returned;
    /// from any other count it runs again.
    fn expanded(&mut self, t: Expr, depth: usize) -> Option<Rc<Expanded>> {
        let start = self.steps;
        if let Some((v, used)) = self.expansions.get(&(t, depth)) {
            if start + used <= MAX_STEPS {
                self.steps = start + used;
                return v.clone();
            }
        }
        let v = self.expanded_uncached(t, depth).map(Rc::new);
        if self.steps <= MAX_STEPS {
            self.expansions
                .insert((t, depth), (v.clone(), self.steps - start));
        }
        v
    }

    fn expanded_uncached(&mut self, t: Expr, depth: usize) -> Option<Expanded> {
        match div_by(t, Op::Mod) {
            Some((y, m)) => {
                let ly = self.expand(&*lin(y)?, depth + 1)?;
                let q = self.floordiv_in(&ly, m, true)?;
                Some(Expanded::Mod(ly, q, m))
            }
            None => {
                // a quotient in reduced form, as the expanded ones are
                let (z, c) = div_by(t, Op::FloorDiv)?;
                let q = self.floordiv_in(&*lin(z)?, c, true)?;
                Some(Expanded::Fd(q))
            }
        }
    }

    /// Folds pairs `k·Y - k·m·(Y fd m)` of a floordiv-basis sum back into `k·(Y mod m)`
    /// (`add-floordiv-to-mod`), where no atom outside the sum is brought in.
    fn refold(&mut self, mut e: Linear) -> Option<Linear> {
        'outer: for _ in 0..64 {
            if !self.budget() {
                return None;
            }
            let fds: Vec<(Expr, i64, Expr, i64)> = e
                .terms
                .iter()
                .filter_map(|&(t, q)| div_by(t, Op::FloorDiv).map(|(x, mm)| (t, q, x, mm)))
                .collect();
            for &(p, q, x, mm) in &fds {
                // Y = X (m = M), or Y = X fd a for a summand X fd a with a dividing M
                let mut cands: Vec<(Linear, i64)> = vec![(Linear::clone(&*lin(x)?), mm)];
                for &(t2, _, x2, a) in &fds {
                    if x2 == x && a < mm && mm % a == 0 {
                        cands.push((atom(t2), mm / a));
                    }
                }
                for (ly, m) in cands {
                    if q % m != 0 {
                        continue;
                    }
                    let Some(k) = (q / m).checked_neg() else {
                        continue;
                    };
                    let Some(rest) = q
                        .checked_neg()
                        .and_then(|nq| add_scaled(&e, &atom(p), nq))
                        .and_then(|r| add_scaled(&r, &ly, k.checked_neg()?))
                    else {
                        continue;
                    };
                    if rest
                        .terms
                        .iter()
                        .any(|t| !e.terms.iter().any(|u| u.0 == t.0))
                    {
                        continue;
                    }
                    let Some(md) = self.modulo(&ly, m) else {
                        continue;
                    };
                    e = add_scaled(&rest, &md, k)?;
                    continue 'outer;
                }
            }
            return Some(e);
        }
        Some(e)
    }
}

// ------------------------------------------------------------------ the digit candidate
//
// A second candidate per expression, built without search: every subterm written in the
// *quotient basis* `Σ k·(b floordiv p) + k0` over bases b (a variable, or a sum the
// divisions could not split, kept whole), where `b floordiv 1` is b itself. A base's terms
// `Σ c_j·(b fd P_j)` over a divisibility chain P_0 | P_1 | ... are also its mixed-radix
// digits `D_i = (b fd P_i) mod (P_{i+1} / P_i)` (the last `b fd P_m`):
//
//   b fd P_j = Σ_{i >= j} (P_i / P_j)·D_i        (floordiv-nested, add-floordiv-to-mod)
//
// A division `S fd c` splits S digit by digit: a term `k·D` with c | k leaves the
// division (floordiv-split-multiples); else D is cut at `a = c / gcd(k, c)`,
// `D = a·(D fd a) + D mod a` (add-floordiv-to-mod), `k·a·(D fd a)` leaves and `k·(D mod a)`
// stays; when what stays lies in one window `[w·c, w·c + c - 1]` the quotient is what
// left plus w (interval-constant). Otherwise the small-remainder split
// (floordiv-small-remainder) or, last, S becomes a base of its own. `S mod c` is
// `S - c·(S fd c)` (add-floordiv-to-mod) in this basis. Reshape and transpose chains of
// any depth are sums of digits, so they come out flat:
//
// ```text
// (d1 floordiv 64) * 512 + d0 * 64 + d1 mod 64,  d1 in [0, 127]
//   = 512·(d1 fd 64) + 64·d0 + d1 - 64·(d1 fd 64)         (quotient basis)
//   = d0 * 64 + d1 + (d1 floordiv 64) * 448                (one division, not two)
// ```
//
// Printing picks per base the cheaper of the quotient form and the digit form.

/// `Σ k·(base floordiv p) + constant`, keyed by `(base, p)`; no zero coefficient.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct QSum {
    terms: Terms,
    constant: i64,
}

type Key = (Expr, i64);

/// `(key, coefficient)` pairs sorted by key, keys distinct: the map of a [`QSum`]'s terms
/// (a handful each; a sorted vector, not a `BTreeMap`, whose nodes cost an allocation
/// per clone, and `QSum`s are cloned at every step). Iterates in key order, as a
/// `BTreeMap` does.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Terms(Vec<(Key, i64)>);

fn pair(x: &(Key, i64)) -> (&Key, &i64) {
    (&x.0, &x.1)
}

impl Terms {
    fn find(&self, key: &Key) -> Result<usize, usize> {
        self.0.binary_search_by(|x| x.0.cmp(key))
    }

    fn insert(&mut self, key: Key, v: i64) {
        match self.find(&key) {
            Ok(i) => self.0[i].1 = v,
            Err(i) => self.0.insert(i, (key, v)),
        }
    }

    fn contains_key(&self, key: &Key) -> bool {
        self.find(key).is_ok()
    }

    /// The entries from `key` on, in order.
    fn range_from(&self, key: Key) -> impl Iterator<Item = (&Key, &i64)> {
        let i = match self.find(&key) {
            Ok(i) | Err(i) => i,
        };
        self.0[i..].iter().map(pair)
    }

    fn iter(&self) -> impl Iterator<Item = (&Key, &i64)> {
        self.0.iter().map(pair)
    }

    fn keys(&self) -> impl Iterator<Item = &Key> {
        self.0.iter().map(|x| &x.0)
    }

    fn values(&self) -> impl Iterator<Item = &i64> {
        self.0.iter().map(|x| &x.1)
    }

    fn values_mut(&mut self) -> impl Iterator<Item = &mut i64> {
        self.0.iter_mut().map(|x| &mut x.1)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

impl<'a> IntoIterator for &'a Terms {
    type Item = (&'a Key, &'a i64);
    type IntoIter =
        std::iter::Map<std::slice::Iter<'a, (Key, i64)>, fn(&(Key, i64)) -> (&Key, &i64)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(pair)
    }
}

impl QSum {
    fn konst(c: i64) -> QSum {
        QSum {
            terms: Default::default(),
            constant: c,
        }
    }

    fn quot(b: Expr, p: i64) -> QSum {
        let mut q = QSum::konst(0);
        q.terms.insert((b, p), 1);
        q
    }

    /// `self + k·o`; `None` on overflow.
    fn add_scaled(&self, o: &QSum, k: i64) -> Option<QSum> {
        // one merge of the two sorted term lists
        let (a, b) = (&self.terms.0, &o.terms.0);
        let mut terms = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            let ord = match (a.get(i), b.get(j)) {
                (Some(x), Some(y)) => x.0.cmp(&y.0),
                (Some(_), None) => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            match ord {
                std::cmp::Ordering::Less => {
                    terms.push(a[i]);
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    let v = b[j].1.checked_mul(k)?;
                    if v != 0 {
                        terms.push((b[j].0, v));
                    }
                    j += 1;
                }
                std::cmp::Ordering::Equal => {
                    let v = a[i].1.checked_add(b[j].1.checked_mul(k)?)?;
                    if v != 0 {
                        terms.push((a[i].0, v));
                    }
                    i += 1;
                    j += 1;
                }
            }
        }
        Some(QSum {
            terms: Terms(terms),
            constant: self.constant.checked_add(o.constant.checked_mul(k)?)?,
        })
    }

    fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }
}

/// One digit `(base fd p) mod e` (`e` None: `base fd p`, the top digit).
#[derive(Clone, Copy, Debug)]
struct Digit {
    base: Expr,
    p: i64,
    e: Option<i64>,
}

impl Digit {
    /// The digit in the quotient basis: `(b fd p) mod e = (b fd p) - e·(b fd p·e)`.
    fn qsum(self) -> Option<QSum> {
        let q = QSum::quot(self.base, self.p);
        match self.e {
            None => Some(q),
            Some(e) => q.add_scaled(&QSum::quot(self.base, self.p.checked_mul(e)?), -e),
        }
    }
}

/// Most distinct subterms one digit candidate may visit (a bound on work, by count).
const MAX_DIGIT_NODES: usize = 4_000;

/// Whether every floordiv and mod of `e` is one digit of a variable (`v floordiv c`,
/// `v mod c`, `(v floordiv p) mod e`, positive constant divisors, `v` below 63) that
/// occurs nowhere else in `e`, and `e` has no ceildiv, min or max (see
/// `Folder::digit_may_be_lighter`).
fn single_digits(e: Expr) -> bool {
    // (free: variables met outside a division; digits: variables of a digit)
    fn walk(e: Expr, free: &mut u64, digits: &mut u64) -> bool {
        let digit_var = |x: Expr| match x.kind() {
            ExprKind::Var(v) if v < 63 => Some(v),
            _ => None,
        };
        let pos = |c: Expr| c.as_const().is_some_and(|c| c > 0);
        match e.kind() {
            ExprKind::Const(_) => true,
            ExprKind::Var(v) => {
                if v >= 63 {
                    return false;
                }
                *free |= 1 << v;
                true
            }
            ExprKind::Bin(Op::Add | Op::Mul, a, b) => {
                walk(a, free, digits) && walk(b, free, digits)
            }
            ExprKind::Bin(op @ (Op::FloorDiv | Op::Mod), a, c) if pos(c) => {
                let v = match (op, a.kind()) {
                    (_, ExprKind::Var(_)) => digit_var(a),
                    (Op::Mod, ExprKind::Bin(Op::FloorDiv, x, p)) if pos(p) => digit_var(x),
                    _ => None,
                };
                let Some(v) = v else {
                    return false;
                };
                let bit = 1u64 << v;
                if *digits & bit != 0 {
                    return false;
                }
                *digits |= bit;
                true
            }
            _ => false,
        }
    }
    let (mut free, mut digits) = (0u64, 0u64);
    walk(e, &mut free, &mut digits) && free & digits == 0
}

impl Folder<'_> {
    /// Whether a variable of `e` is fixed to one point by its bounds (bit 63 of the mask,
    /// variables past 62, counts as one).
    fn has_point_var(&self, e: Expr) -> bool {
        let mask = e.var_mask();
        (0..64).any(|v| {
            mask & (1u64 << v) != 0 && (v == 63 || self.bounds.get(v).is_some_and(|b| b.is_point()))
        })
    }

    /// Whether the digit candidate could be [`lighter`] than the pass's result `out`: not
    /// when `out` is affine, weighs no more than one division and has no point variable
    /// (the candidate writes those as constants). A candidate with a division then weighs
    /// at least as much; one without is the same affine form over the variable bounds
    /// (the quotient basis with every division resolved), which `out` already is. Most
    /// small maps end there, and the candidate was a third of their pre-pass.
    ///
    /// Nor when every division of `out` is one digit of a variable of its own
    /// (`v floordiv c`, `v mod c`, `(v floordiv p) mod e`, each such `v` nowhere else in
    /// `out`; [`single_digits`]): the candidate's quotient basis has one base per digit,
    /// printed in the cheaper of its quotient and digit forms, which is the digit as
    /// written, and the rest is the same affine form. Half of the corpus's candidates
    /// were of such an expression (`d1 mod 2`, `(d4 floordiv 32) mod 32`), none lighter.
    fn digit_may_be_lighter(&self, out: Expr) -> bool {
        if out.has_min_max() || self.has_point_var(out) {
            return true;
        }
        if out.has_div() {
            return !single_digits(out);
        }
        expr_rank(out).0 > super::cost::DIV
    }

    /// The interval of base `b` (a variable's bounds, or an opaque base's recorded range).
    fn base_range(&mut self, b: Expr) -> Interval {
        if let Some(&r) = self.base_ranges.get(&b) {
            return r;
        }
        self.info(b).0
    }

    /// The range of `b fd p`.
    fn quot_range(&mut self, b: Expr, p: i64) -> Option<Interval> {
        let r = self.base_range(b);
        if r.is_empty() || r.lo == i64::MIN || r.hi == i64::MAX {
            return None;
        }
        Some(Interval::new(floor_div(r.lo, p), floor_div(r.hi, p)))
    }

    fn digit_range(&mut self, d: Digit) -> Option<Interval> {
        let q = self.quot_range(d.base, d.p)?;
        Some(match d.e {
            Some(e) if q.lo >= 0 && q.hi <= e - 1 => q,
            Some(e) => Interval::new(0, e - 1),
            None => q,
        })
    }

    /// The digits of `s`, base by base: `None` when some base's divisors are not a chain.
    fn digits_of(&self, s: &QSum) -> Option<Vec<(Digit, i64)>> {
        let mut out = Vec::new();
        let mut it = s.terms.iter().peekable();
        while let Some((&(b, _), _)) = it.peek() {
            let mut chain: Vec<(i64, i64)> = Vec::new();
            while let Some(&(&(b2, p), &k)) = it.peek() {
                if b2 != b {
                    break;
                }
                chain.push((p, k));
                it.next();
            }
            for w in chain.windows(2) {
                if w[1].0 % w[0].0 != 0 {
                    return None;
                }
            }
            // coefficient of D_i = Σ_{j <= i} c_j·(P_i / P_j)
            let mut coef: i64 = 0;
            for i in 0..chain.len() {
                let (p, c) = chain[i];
                if i > 0 {
                    coef = coef.checked_mul(p / chain[i - 1].0)?;
                }
                coef = coef.checked_add(c)?;
                let e = chain.get(i + 1).map(|&(p2, _)| p2 / p);
                if coef != 0 {
                    out.push((Digit { base: b, p, e }, coef));
                }
            }
        }
        Some(out)
    }

    /// The range of `s` from its digits (tight for sums of digits).
    fn qrange(&mut self, s: &QSum) -> Option<Interval> {
        let mut lo = s.constant as i128;
        let mut hi = s.constant as i128;
        let terms: Vec<(Option<Interval>, i64)> = match self.digits_of(s) {
            Some(ds) => ds
                .into_iter()
                .map(|(d, k)| (self.digit_range(d), k))
                .collect(),
            None => s
                .terms
                .iter()
                .map(|(&(b, p), &k)| (b, p, k))
                .collect::<Vec<_>>()
                .into_iter()
                .map(|(b, p, k)| (self.quot_range(b, p), k))
                .collect(),
        };
        for (r, k) in terms {
            let r = r?;
            let (a, b) = (r.lo as i128 * k as i128, r.hi as i128 * k as i128);
            lo += a.min(b);
            hi += a.max(b);
        }
        let lo = i64::try_from(lo).ok()?;
        let hi = i64::try_from(hi).ok()?;
        Some(Interval::new(lo, hi))
    }

    /// `s fd c` (`c > 0`) in the quotient basis.
    fn qfd(&mut self, s: &QSum, c: i64) -> Option<QSum> {
        self.qsteps += 1;
        if self.qsteps > MAX_STEPS || self.qstack.len() > 64 {
            return None;
        }
        self.qstack.push((s.clone(), c));
        let out = self.qfd_in(s, c);
        self.qstack.pop();
        out
    }

    fn qfd_in(&mut self, s: &QSum, c: i64) -> Option<QSum> {
        if c == 1 {
            return Some(s.clone());
        }
        if let Some(k) = s.as_const() {
            return Some(QSum::konst(floor_div(k, c)));
        }
        // digit by digit
        if let Some(q) = self.digitwise(s, c) {
            let q = self.resolve(q);
            self.slices.entry(q.clone()).or_insert((s.clone(), c));
            return Some(q);
        }
        // a quotient found before: (S fd p) fd c = S fd (p·c) (floordiv-nested)
        if let Some((whole, p)) = self.slices.get(s).cloned() {
            if let Some(pc) = p.checked_mul(c) {
                // (not back into a division this one is already part of)
                if !self.qstack.iter().any(|(w, d)| *d == pc && *w == whole) {
                    return self.qfd(&whole, pc);
                }
            }
        }
        // floordiv-small-remainder: (g·A + B) fd c = A fd (c / g) when B in [0, g - 1]
        for g in remainder_factors(s.terms.values().copied(), c) {
            let r0 = modulo(s.constant, g);
            // checked: the constant may be near -2^63
            let Some(rest) = s.constant.checked_sub(r0) else {
                continue;
            };
            let mut big = QSum::konst(rest / g);
            let mut small = QSum::konst(r0);
            for (&key, &k) in &s.terms {
                if k % g == 0 {
                    big.terms.insert(key, k / g);
                } else {
                    small.terms.insert(key, k);
                }
            }
            let fits = self
                .qrange(&small)
                .is_some_and(|r| r.lo >= 0 && r.hi <= g - 1);
            if fits {
                return self.qfd(&big, c / g);
            }
        }
        // a base of its own: (g·T + c·q0) fd c = q0 + T fd (c / g), g the common factor
        // of T's coefficients and c (floordiv-split-multiples, floordiv-small-remainder)
        let q0 = floor_div(s.constant, c);
        let t = s.add_scaled(&QSum::konst(q0.checked_mul(c)?), -1)?;
        self.opaque_quot(t, c)?.add_scaled(&QSum::konst(q0), 1)
    }

    /// `t fd c` as a quotient of t made a base of its own (after the common factor of t's
    /// coefficients and c is cancelled: floordiv-small-remainder with B = 0).
    fn opaque_quot(&mut self, t: QSum, c: i64) -> Option<QSum> {
        let g = t.terms.values().fold(gcd(t.constant, c), |g, &k| gcd(g, k));
        let g = g.max(1);
        let mut t = t;
        for k in t.terms.values_mut() {
            *k /= g;
        }
        t.constant /= g;
        let range = self.qrange(&t)?;
        let b = self.qexpr(&t)?;
        if b.as_const().is_some() {
            return None;
        }
        let slot = self.base_ranges.entry(b).or_insert(range);
        *slot = slot.intersect(&range);
        self.base_sums.entry(b).or_insert(t);
        Some(QSum::quot(b, c / g))
    }

    /// The quotients `T fd p` (p > 1) of `s` whose base T is an opaque sum, with their
    /// coefficients.
    fn opaque_quotients(&self, s: &QSum) -> Vec<((Expr, i64), i64)> {
        s.terms
            .iter()
            .filter(|(&(b, p), _)| p > 1 && self.base_sums.contains_key(&b))
            .map(|(&key, &k)| (key, k))
            .collect()
    }

    /// `s` with every quotient `T fd p` of an opaque base written
    /// `A + (T - p·A) fd p` where `p·A` is the part of T in multiples of p
    /// (floordiv-split-multiples): what prints, so `k·T - k·p·(T fd p)` still gathers
    /// into `k·(T' mod p)` for the smaller T'.
    fn split_opaque(&mut self, s: &QSum) -> Option<QSum> {
        let mut out = s.clone();
        for ((b, p), k) in self.opaque_quotients(s) {
            let t = self.base_sums.get(&b)?.clone();
            let mut outside = QSum::konst(floor_div(t.constant, p));
            let mut inside = QSum::konst(modulo(t.constant, p));
            for (&key, &j) in &t.terms {
                if j % p == 0 {
                    outside.terms.insert(key, j / p);
                } else {
                    inside.terms.insert(key, j);
                }
            }
            if outside.terms.is_empty() || inside.terms.is_empty() {
                continue;
            }
            let q = self.opaque_quot(inside, p)?.add_scaled(&outside, 1)?;
            out = out.add_scaled(&QSum::quot(b, p), -k)?.add_scaled(&q, k)?;
        }
        Some(out)
    }

    /// `s fd c` digit by digit, where what stays under the division lies in one window.
    fn digitwise(&mut self, s: &QSum, c: i64) -> Option<QSum> {
        let ds = self.digits_of(s)?;
        let mut high = QSum::konst(floor_div(s.constant, c));
        let mut low = QSum::konst(modulo(s.constant, c));
        for (d, k) in ds {
            let a = c / gcd(k, c);
            if a == 1 {
                high = high.add_scaled(&d.qsum()?, k / c)?;
                continue;
            }
            let r = self.digit_range(d)?;
            let splittable = match d.e {
                Some(e) => e % a == 0 && e > a,
                None => true,
            };
            if (r.lo >= 0 && r.hi < a) || !splittable {
                low = low.add_scaled(&d.qsum()?, k)?;
                continue;
            }
            let upper = Digit {
                base: d.base,
                p: d.p.checked_mul(a)?,
                e: d.e.map(|e| e / a),
            };
            let lower = Digit {
                base: d.base,
                p: d.p,
                e: Some(a),
            };
            high = high.add_scaled(&upper.qsum()?, k.checked_mul(a)? / c)?;
            low = low.add_scaled(&lower.qsum()?, k)?;
            if low.terms.len() > 64 {
                return None;
            }
        }
        let r = self.qrange(&low)?;
        let w = floor_div(r.lo, c);
        if w != floor_div(r.hi, c) {
            return None;
        }
        high.add_scaled(&QSum::konst(w), 1)
    }

    /// `q` with every quotient `T fd P` of an opaque base T that splits digit by digit
    /// over T's own sum written so (floordiv-nested: the base was cut further).
    fn resolve(&mut self, q: QSum) -> QSum {
        let mut q = q;
        for ((b, p), k) in self.opaque_quotients(&q) {
            let Some(t) = self.base_sums.get(&b).cloned() else {
                continue;
            };
            self.qsteps += 1;
            if self.qsteps > MAX_STEPS {
                break;
            }
            let Some(r) = self.digitwise(&t, p) else {
                continue;
            };
            if let Some(n) = q
                .add_scaled(&QSum::quot(b, p), -k)
                .and_then(|n| n.add_scaled(&r, k))
            {
                q = n;
            }
        }
        q
    }

    /// `e` in the quotient basis (memoized); `None` where it has no such form (a min, a
    /// product of two variables, a division by a non-constant) or on overflow.
    fn qsum(&mut self, e: Expr) -> Option<QSum> {
        if let Some(q) = self.qmemo.get(&e) {
            return q.clone();
        }
        if self.qmemo.len() >= MAX_DIGIT_NODES {
            return None;
        }
        let out = self.qsum_uncached(e);
        self.qmemo.insert(e, out.clone());
        out
    }

    fn qsum_uncached(&mut self, e: Expr) -> Option<QSum> {
        match e.kind() {
            ExprKind::Const(c) => Some(QSum::konst(c)),
            ExprKind::Var(v) => {
                let b = self.bounds.get(v as usize).copied()?;
                if b.is_empty() || b.lo == i64::MIN || b.hi == i64::MAX {
                    return None;
                }
                if b.is_point() {
                    return Some(QSum::konst(b.lo));
                }
                Some(QSum::quot(e, 1))
            }
            ExprKind::Bin(op, a, b) => {
                let qa = self.qsum(a)?;
                let qb = self.qsum(b)?;
                match op {
                    Op::Add => qa.add_scaled(&qb, 1),
                    Op::Mul => match (qa.as_const(), qb.as_const()) {
                        (_, Some(k)) => QSum::konst(0).add_scaled(&qa, k),
                        (Some(k), None) => QSum::konst(0).add_scaled(&qb, k),
                        _ => None,
                    },
                    Op::FloorDiv | Op::Mod | Op::CeilDiv => {
                        let c = qb.as_const().filter(|&c| c > 0)?;
                        match op {
                            Op::FloorDiv => self.qfd(&qa, c),
                            Op::Mod => {
                                let q = self.qfd(&qa, c)?;
                                qa.add_scaled(&q, c.checked_neg()?)
                            }
                            // ceildiv-to-floordiv: a ceildiv c = (a + c - 1) floordiv c
                            _ => self.qfd(&qa.add_scaled(&QSum::konst(c - 1), 1)?, c),
                        }
                    }
                    Op::Min | Op::Max => None,
                }
            }
        }
    }

    /// `b fd p` as an expression (a point range is that constant: interval-constant).
    fn quot_expr(&mut self, b: Expr, p: i64) -> Expr {
        if let Some(r) = self.quot_range(b, p) {
            if r.is_point() {
                return Expr::constant(r.lo);
            }
        }
        if p == 1 {
            b
        } else {
            Expr::bin(Op::FloorDiv, b, Expr::constant(p))
        }
    }

    /// The digit as an expression (`mod-in-range` drops a mod its range never reaches).
    fn digit_expr(&mut self, d: Digit) -> Expr {
        let q = self.quot_expr(d.base, d.p);
        match d.e {
            None => q,
            Some(e) => match self.quot_range(d.base, d.p) {
                Some(r) if r.lo >= 0 && r.hi <= e - 1 => q,
                _ => Expr::bin(Op::Mod, q, Expr::constant(e)),
            },
        }
    }

    /// `s` printed: an opaque base T whose multiple `k·T` the sum holds spelled out (as
    /// `T mod c = T - c·(T fd c)` leaves it) is gathered back into one atom `k·(T fd 1)`
    /// where that prints cheaper, then [`Self::qexpr_parts`].
    fn qexpr(&mut self, s: &QSum) -> Option<Expr> {
        let s = &self.split_opaque(s)?;
        let mut best = self.qexpr_parts(s)?;
        let mut cur = s.clone();
        let bases: Vec<Expr> = s
            .terms
            .keys()
            .map(|&(b, _)| b)
            .filter(|b| self.base_sums.contains_key(b))
            .collect();
        for b in bases {
            let Some(t) = self.base_sums.get(&b).cloned() else {
                continue;
            };
            if cur.terms.contains_key(&(b, 1)) {
                continue;
            }
            let Some((&(_, p), &q)) = cur.terms.range_from((b, 0)).next().filter(|x| x.0 .0 == b)
            else {
                continue;
            };
            if q % p != 0 {
                continue;
            }
            let Some(k) = (q / p).checked_neg() else {
                continue;
            };
            let Some(next) = k
                .checked_neg()
                .and_then(|nk| cur.add_scaled(&t, nk))
                .and_then(|n| n.add_scaled(&QSum::quot(b, 1), k))
            else {
                continue;
            };
            if let Some(e) = self.qexpr_parts(&next) {
                if expr_rank(e) < expr_rank(best) {
                    best = e;
                    cur = next;
                }
            }
        }
        Some(best)
    }

    /// `s` printed: per base the cheaper of its quotient form and its digit form.
    fn qexpr_parts(&mut self, s: &QSum) -> Option<Expr> {
        let mut parts = Linear::constant(s.constant);
        let mut it = s
            .terms
            .iter()
            .map(|(&(b, p), &k)| (b, p, k))
            .collect::<Vec<_>>();
        it.sort_by_key(|&(b, p, _)| (b, p));
        let mut i = 0;
        while i < it.len() {
            let b = it[i].0;
            let mut j = i;
            while j < it.len() && it[j].0 == b {
                j += 1;
            }
            let mut quot = Linear::constant(0);
            for &(_, p, k) in &it[i..j] {
                let q = self.quot_expr(b, p);
                quot = add_scaled(&quot, &*lin(q)?, k)?;
            }
            let mut best = quot;
            let mut one = QSum::konst(0);
            for &(_, p, k) in &it[i..j] {
                one.terms.insert((b, p), k);
            }
            if let Some(ds) = self.digits_of(&one) {
                let mut dig = Linear::constant(0);
                for (d, k) in ds {
                    let de = self.digit_expr(d);
                    dig = add_scaled(&dig, &*lin(de)?, k)?;
                }
                if expr_rank(canonical(dig.to_expr())) < expr_rank(canonical(best.to_expr())) {
                    best = dig;
                }
            }
            parts = add_scaled(&parts, &best, 1)?;
            i = j;
        }
        Some(canonical(parts.to_expr()))
    }

    /// The digit candidate for `e`, or `None`. None for an expression without a division
    /// or a variable fixed to one point: its quotient basis is its linear form (every base
    /// a variable, `p = 1`), which the pass's own result is already (a third of a small
    /// map's pre-pass, computed for nothing). (The candidate is what writes a point
    /// variable as its constant: the pass keeps the variable, of the same rank.)
    fn digit_candidate(&mut self, e: Expr) -> Option<Expr> {
        if !e.has_div() && !self.has_point_var(e) {
            return None;
        }
        let q = self.qsum(e)?;
        self.qexpr(&q)
    }
}
