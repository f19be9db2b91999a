//! The cost of an expression: the sum of its operators' weights, where `floordiv`,
//! `ceildiv` and `mod` weigh far more than `+` and `*`. Extraction minimises
//! `(weight, size)`, so among forms of equal weight the smaller tree wins, and among
//! trees of equal size egg's node order (deterministic for a given input) decides.
//!
//! ```text
//! (d0 * 16 + d1) floordiv 8    weight 1 + 2 + 32 = 35
//! d0 * 2 + d1 floordiv 8       weight 2 + 1 + 32 = 35 (the same; split rules enable more)
//! d0                           weight 0
//! ```

use super::analysis::EGraph;
use super::language::IxLang;
use crate::expr::{rank_of_bin, rank_of_leaf, Expr, ExprKind, Op};
use egg::{CostFunction, Id, Language};

/// The weight of `+`.
pub const ADD: u64 = Op::Add.weight();
/// The weight of `*`.
pub const MUL: u64 = Op::Mul.weight();
/// The weight of `floordiv`, `ceildiv` and `mod`.
pub const DIV: u64 = Op::FloorDiv.weight();

/// The weight of one operator (`Op::weight`: a comparison and a select, min and max,
/// dearer than `*`, far cheaper than a division).
pub fn op_weight(op: Op) -> u64 {
    op.weight()
}

/// The weight of a node alone (leaves weigh nothing).
pub fn node_weight(node: &IxLang) -> u64 {
    node.op().map(|(op, _, _)| op_weight(op)).unwrap_or(0)
}

/// Sum of the operator weights of `e` (shared subtrees counted each time, as printed).
pub fn expr_cost(e: Expr) -> u64 {
    match e.kind() {
        ExprKind::Bin(op, a, b) => op_weight(op)
            .saturating_add(expr_cost(a))
            .saturating_add(expr_cost(b)),
        _ => 0,
    }
}

/// Number of div-like operators in `e`.
pub fn div_count(e: Expr) -> usize {
    match e.kind() {
        ExprKind::Bin(op, a, b) => usize::from(op.is_div_like()) + div_count(a) + div_count(b),
        _ => 0,
    }
}

/// The rank extraction minimises: `(weight, weight inside dividends, size, negative
/// constants, constants)`, compared lexicographically. The second term prefers
/// `d0 * 2 + (d1 * 4 + d2) floordiv 8` to the equally heavy `(d0 * 16 + d1 * 4 + d2)
/// floordiv 8`: less work under the division. The last two break the ties between forms
/// of one shape, so equal maps reached from different inputs print alike: fewer negative
/// constants first (`(bl_x * 128 + th_x) mod 75` stays, not `(th_x - bl_x * 22) mod 75`),
/// then the smaller sum of magnitudes: `(d0 floordiv 2) mod 4` (6) over
/// `(d0 mod 8) floordiv 2` (10), `(d0 * 8 + d1) mod 32` over `(d0 * 40 + d1) mod 32`.
pub type Rank = crate::expr::Rank;

/// The [`Rank`] of an expression, kept with each interned node (computed once from its
/// children's ranks by `expr::rank_of_bin`, the same formula extraction uses below;
/// `rank_is_kept_with_the_node` checks it against a walk of the tree).
pub fn expr_rank(e: Expr) -> Rank {
    e.rank()
}

/// A fingerprint of a term built from its operators, constants and variables alone (never
/// from e-class ids), so it is the same in every e-graph that holds the term.
fn term_hash(tag: u64, a: u64, b: u64) -> u64 {
    // splitmix64's finalizer over a sequence-sensitive fold: a + b and b + a differ.
    let mut h = tag
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .wrapping_add(a.rotate_left(17))
        .wrapping_add(b.rotate_left(41) ^ 0xd6e8_feb8_6659_fd93);
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// Extraction cost: the [`Rank`] of the extracted term, then the term's fingerprint. Among
/// forms of equal rank the choice must not depend on how the e-graph numbered its classes
/// (which differs between `simplify M` and `simplify M explain`, whose e-graph records
/// proofs): the fingerprint decides, the same way in both. Whether an extracted form
/// replaces the input is still decided by the [`Rank`] alone (strictly lower).
pub struct IxCost;

impl CostFunction<IxLang> for IxCost {
    type Cost = (Rank, u64);
    fn cost<C>(&mut self, enode: &IxLang, mut costs: C) -> (Rank, u64)
    where
        C: FnMut(Id) -> (Rank, u64),
    {
        match enode.op() {
            Some((op, a, b)) => {
                let ((ra, ha), (rb, hb)) = (costs(a), costs(b));
                (rank_of_bin(op, ra, rb), term_hash(3 + op as u64, ha, hb))
            }
            None => match enode {
                IxLang::Num(c) => (rank_of_leaf(Some(*c)), term_hash(1, *c as u64, 0)),
                IxLang::Var(v) => (rank_of_leaf(None), term_hash(2, u64::from(v.0), 0)),
                _ => (rank_of_leaf(None), 0),
            },
        }
    }
}

/// The cheapest term of each class of a rebuilt e-graph under [`IxCost`], as egg's
/// `Extractor` finds it: the same passes over the classes in the same order until one
/// changes nothing, a class's cost replaced only by a strictly lower one, and among a
/// class's nodes the first of the lowest cost (a node whose children are not all costed
/// yet counts as dearest). Only the bookkeeping differs: the costs in a vector indexed by
/// class id, not a hash map keyed by it, the chosen node kept as its index in the class
/// rather than a copy, and terms built straight into [`Expr`]s, each class once. On the
/// maps that reach the e-node bound, egg's extraction was 5-12% of the time. (Debug builds
/// check the simplifier's extractions against egg's: `rewrite::rewrite_exprs`.)
pub struct Cheapest<'a> {
    egraph: &'a EGraph,
    best: Vec<Option<((Rank, u64), usize)>>,
    built: fxhash::FxHashMap<usize, Expr>,
}

impl<'a> Cheapest<'a> {
    pub fn new(egraph: &'a EGraph) -> Cheapest<'a> {
        let n = egraph
            .classes()
            .map(|c| usize::from(c.id) + 1)
            .max()
            .unwrap_or(0);
        let mut best: Vec<Option<((Rank, u64), usize)>> = vec![None; n];
        let slot = |id: Id| usize::from(egraph.find(id));
        let mut changed = true;
        while changed {
            changed = false;
            for class in egraph.classes() {
                let mut pick: Option<((Rank, u64), usize)> = None;
                for (i, node) in class.nodes.iter().enumerate() {
                    if !node.all(|c| best[slot(c)].is_some()) {
                        continue;
                    }
                    // (every child is costed: checked above)
                    let cost =
                        IxCost.cost(node, |c| best[slot(c)].map(|b| b.0).unwrap_or_default());
                    if pick.is_none_or(|(p, _)| cost < p) {
                        pick = Some((cost, i));
                    }
                }
                let at = usize::from(class.id);
                if let Some((cost, i)) = pick {
                    if best[at].is_none_or(|(old, _)| cost < old) {
                        best[at] = Some((cost, i));
                        changed = true;
                    }
                }
            }
        }
        Cheapest {
            egraph,
            best,
            built: Default::default(),
        }
    }

    /// The cheapest term of the class of `id`, built bottom-up with an explicit stack (no
    /// recursion on the depth of the term); `None` for a class without a term (none in a
    /// rebuilt e-graph).
    pub fn term(&mut self, id: Id) -> Option<Expr> {
        let slot = |id: Id| usize::from(self.egraph.find(id));
        let mut stack = vec![(slot(id), false)];
        while let Some((at, ready)) = stack.pop() {
            if self.built.contains_key(&at) {
                continue;
            }
            let (_, i) = (*self.best.get(at)?)?;
            let e = match self.egraph[Id::from(at)].nodes[i] {
                IxLang::Num(c) => Expr::constant(c),
                IxLang::Var(v) => Expr::var(v.0),
                ref n => {
                    let (op, a, b) = n.op()?;
                    let (a, b) = (slot(a), slot(b));
                    if !ready {
                        stack.push((at, true));
                        stack.push((b, false));
                        stack.push((a, false));
                        continue;
                    }
                    Expr::bin(op, *self.built.get(&a)?, *self.built.get(&b)?)
                }
            };
            self.built.insert(at, e);
        }
        self.built.get(&slot(id)).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rank as the definition reads, by walking the tree.
    fn walked(e: Expr) -> Rank {
        match e.kind() {
            ExprKind::Bin(op, a, b) => rank_of_bin(op, walked(a), walked(b)),
            ExprKind::Const(c) => rank_of_leaf(Some(c)),
            ExprKind::Var(_) => rank_of_leaf(None),
        }
    }

    #[test]
    fn rank_is_kept_with_the_node() {
        // shared subterms, every operator, negative and large constants, high variables
        let x = Expr::var(0)
            .mul(Expr::constant(768))
            .add(Expr::var(2))
            .add(Expr::constant(-3));
        let y = Expr::bin(Op::FloorDiv, x, Expr::constant(8));
        let z = Expr::bin(Op::Mod, y.add(x), Expr::constant(36))
            .mul(Expr::constant(i64::MAX))
            .add(Expr::bin(Op::CeilDiv, Expr::var(70), Expr::var(1)))
            .add(Expr::bin(
                Op::Min,
                y,
                Expr::bin(Op::Max, x, Expr::constant(-9)),
            ));
        let mut e = z;
        for k in 0..40 {
            // deep sharing: each level uses the last twice (2^40 leaves as printed)
            e = Expr::bin(Op::Add, Expr::bin(Op::Mod, e, Expr::constant(k + 2)), e);
        }
        for t in [x, y, z, e] {
            if t != e {
                assert_eq!(t.rank(), walked(t), "{t:?}");
            }
        }
        // the deep one (too big to walk) in O(1): 2^40 copies of z as printed
        assert_eq!(e.rank().2, (z.rank().2 + 3) * (1u64 << 40) - 3);
        let mut vars = Vec::new();
        z.visit_vars(&mut |v| vars.push(v));
        vars.sort_unstable();
        vars.dedup();
        let mut once = Vec::new();
        z.each_var(&mut |v| once.push(v));
        assert_eq!(vars, once);
        assert!(z.has_div() && z.has_min_max() && !x.has_div());
        assert!(!z.divisors_are_positive_constants() && y.divisors_are_positive_constants());
    }
}
