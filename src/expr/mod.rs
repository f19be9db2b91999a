//! Integer expressions over the variables of an indexing map.
//!
//! An [`Expr`] is a `Copy` handle into a hash-consing arena ([`intern`]): building the same
//! expression twice gives the same id. Variables are positions in the owning map's variable
//! list (dimensions, then range variables, then runtime variables), so an expression means
//! nothing without its map; printing takes the names.
//!
//! ```text
//! (d0, d1)[s0] -> (d0 * 8 + s0 floordiv 2)
//!   Var(0) = d0, Var(1) = d1, Var(2) = s0
//!   Add(Mul(Var(0), Const(8)), FloorDiv(Var(2), Const(2)))
//! ```
//!
//! Semantics (MLIR's): `floordiv` rounds toward -∞, `ceildiv` toward +∞, and `mod` is
//! `a - (a floordiv b) * b`, never negative for a positive divisor.

pub mod alloc;
pub mod arith;
mod intern;
pub mod linear;
pub mod print;

pub use arith::{eval, EvalError};
pub use intern::arena_size;
pub use linear::{canonical, Linear};
pub use print::{display, ExprDisplay};

use std::cmp::Ordering;

/// An interned expression.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Expr(u32);

/// The operator of an expression node.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Op {
    Add,
    Mul,
    FloorDiv,
    CeilDiv,
    Mod,
    /// `min(a, b)` (XLA's symbolic expressions have it).
    Min,
    /// `max(a, b)`.
    Max,
}

impl Op {
    /// The operator's name as the language writes it.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Add => "+",
            Op::Mul => "*",
            Op::FloorDiv => "floordiv",
            Op::CeilDiv => "ceildiv",
            Op::Mod => "mod",
            Op::Min => "min",
            Op::Max => "max",
        }
    }
    /// `floordiv`, `ceildiv` or `mod`.
    pub fn is_div_like(self) -> bool {
        matches!(self, Op::FloorDiv | Op::CeilDiv | Op::Mod)
    }
    /// `min` or `max`, printed as a function call `min(a, b)`.
    pub fn is_min_max(self) -> bool {
        matches!(self, Op::Min | Op::Max)
    }
    /// The operator's weight in the simplifier's cost (`simplify/cost.rs`): divisions far
    /// dearer than `+` and `*`; a comparison and a select (min, max) in between.
    pub const fn weight(self) -> u64 {
        match self {
            Op::Add => 1,
            Op::Mul => 2,
            Op::FloorDiv | Op::CeilDiv | Op::Mod => 32,
            Op::Min | Op::Max => 4,
        }
    }
}

/// The simplifier's rank of an expression (`simplify::cost::Rank`): `(weight, weight inside
/// dividends, size, negative constants, sum of constant magnitudes)`, shared subtrees
/// counted each time. Kept with every interned node ([`Expr::rank`]).
pub type Rank = (u64, u64, u64, u64, u64);

/// The [`Rank`] of a leaf: a constant `Some(c)` or a variable `None`.
pub fn rank_of_leaf(c: Option<i64>) -> Rank {
    (
        0,
        0,
        1,
        u64::from(c.is_some_and(|c| c < 0)),
        c.map_or(0, |c| c.unsigned_abs()),
    )
}

/// The [`Rank`] of `op(a, b)` from its operands' ranks (saturating).
pub fn rank_of_bin(op: Op, a: Rank, b: Rank) -> Rank {
    let inner = if op.is_div_like() { a.0 } else { 0 };
    (
        op.weight().saturating_add(a.0).saturating_add(b.0),
        inner.saturating_add(a.1).saturating_add(b.1),
        1u64.saturating_add(a.2).saturating_add(b.2),
        a.3.saturating_add(b.3),
        a.4.saturating_add(b.4),
    )
}

/// One node of an expression.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum ExprKind {
    Const(i64),
    Var(u32),
    Bin(Op, Expr, Expr),
}

impl Expr {
    /// The node behind this handle.
    pub fn kind(self) -> ExprKind {
        intern::lookup(self.0)
    }
    /// The arena id (stable for the life of the process; not an order to print by).
    pub fn id(self) -> u32 {
        self.0
    }
    pub fn from_kind(kind: ExprKind) -> Expr {
        Expr(intern::intern(kind))
    }
    pub fn constant(c: i64) -> Expr {
        Expr::from_kind(ExprKind::Const(c))
    }
    pub fn var(index: u32) -> Expr {
        Expr::from_kind(ExprKind::Var(index))
    }
    /// The binary node `op(a, b)`, exactly as given (no folding).
    pub fn bin(op: Op, a: Expr, b: Expr) -> Expr {
        Expr::from_kind(ExprKind::Bin(op, a, b))
    }
    pub fn as_const(self) -> Option<i64> {
        match self.kind() {
            ExprKind::Const(c) => Some(c),
            _ => None,
        }
    }
    pub fn as_var(self) -> Option<u32> {
        match self.kind() {
            ExprKind::Var(v) => Some(v),
            _ => None,
        }
    }

    // Builders with light folding: constants are folded when nothing overflows, neutral
    // elements vanish. They never change the value of the expression.
    pub fn add(self, other: Expr) -> Expr {
        match (self.kind(), other.kind()) {
            (ExprKind::Const(0), _) => other,
            (_, ExprKind::Const(0)) => self,
            (ExprKind::Const(a), ExprKind::Const(b)) if a.checked_add(b).is_some() => {
                Expr::constant(a + b)
            }
            _ => Expr::bin(Op::Add, self, other),
        }
    }
    /// `Σ terms[k] · coeffs[k]` (a tensor's linear offset from its index and strides),
    /// built left to right from 0 with [`Expr::add`] and [`Expr::mul`]; pairs beyond the
    /// shorter slice are ignored.
    pub fn linear_combination(terms: &[Expr], coeffs: &[i64]) -> Expr {
        terms
            .iter()
            .zip(coeffs)
            .fold(Expr::constant(0), |acc, (&t, &c)| {
                acc.add(t.mul(Expr::constant(c)))
            })
    }
    pub fn mul(self, other: Expr) -> Expr {
        match (self.kind(), other.kind()) {
            (ExprKind::Const(1), _) => other,
            (_, ExprKind::Const(1)) => self,
            (ExprKind::Const(0), _) | (_, ExprKind::Const(0)) => Expr::constant(0),
            (ExprKind::Const(a), ExprKind::Const(b)) if a.checked_mul(b).is_some() => {
                Expr::constant(a * b)
            }
            (ExprKind::Const(_), _) => Expr::bin(Op::Mul, other, self),
            _ => Expr::bin(Op::Mul, self, other),
        }
    }
    pub fn neg(self) -> Expr {
        self.mul(Expr::constant(-1))
    }
    /// `self - other`. Subtracting the constant `i64::MIN` adds `i64::MAX` then 1: its
    /// negation does not fit, and a product `-9223372036854775808 * -1` would overflow
    /// wherever it is evaluated or printed.
    pub fn sub(self, other: Expr) -> Expr {
        match other.as_const() {
            Some(i64::MIN) => self.add(Expr::constant(i64::MAX)).add(Expr::constant(1)),
            Some(c) => self.add(Expr::constant(-c)),
            None => self.add(other.neg()),
        }
    }
    pub fn floordiv(self, other: Expr) -> Expr {
        match (self.kind(), other.kind()) {
            (_, ExprKind::Const(1)) => self,
            (ExprKind::Const(a), ExprKind::Const(b)) if b > 0 => {
                Expr::constant(arith::floor_div(a, b))
            }
            _ => Expr::bin(Op::FloorDiv, self, other),
        }
    }
    pub fn ceildiv(self, other: Expr) -> Expr {
        match (self.kind(), other.kind()) {
            (_, ExprKind::Const(1)) => self,
            (ExprKind::Const(a), ExprKind::Const(b)) if b > 0 => match arith::ceil_div(a, b) {
                Some(v) => Expr::constant(v),
                None => Expr::bin(Op::CeilDiv, self, other),
            },
            _ => Expr::bin(Op::CeilDiv, self, other),
        }
    }
    pub fn modulo(self, other: Expr) -> Expr {
        match (self.kind(), other.kind()) {
            (_, ExprKind::Const(1)) => Expr::constant(0),
            (ExprKind::Const(a), ExprKind::Const(b)) if b > 0 => Expr::constant(a.rem_euclid(b)),
            _ => Expr::bin(Op::Mod, self, other),
        }
    }
    /// `min(self, other)`, folded when both are constants or both the same.
    pub fn min(self, other: Expr) -> Expr {
        match (self.kind(), other.kind()) {
            (ExprKind::Const(a), ExprKind::Const(b)) => Expr::constant(a.min(b)),
            _ if self == other => self,
            _ => Expr::bin(Op::Min, self, other),
        }
    }
    /// `max(self, other)`, folded when both are constants or both the same.
    pub fn max(self, other: Expr) -> Expr {
        match (self.kind(), other.kind()) {
            (ExprKind::Const(a), ExprKind::Const(b)) => Expr::constant(a.max(b)),
            _ if self == other => self,
            _ => Expr::bin(Op::Max, self, other),
        }
    }
    /// `op(self, other)` through the folding builders.
    pub fn apply(op: Op, a: Expr, b: Expr) -> Expr {
        match op {
            Op::Add => a.add(b),
            Op::Mul => a.mul(b),
            Op::FloorDiv => a.floordiv(b),
            Op::CeilDiv => a.ceildiv(b),
            Op::Mod => a.modulo(b),
            Op::Min => a.min(b),
            Op::Max => a.max(b),
        }
    }

    /// Replaces every variable `v` by `f(v)`, rebuilding through the folding builders.
    pub fn substitute(self, f: &mut dyn FnMut(u32) -> Expr) -> Expr {
        let mut memo = std::collections::HashMap::new();
        self.substitute_memo(f, &mut memo)
    }
    fn substitute_memo(
        self,
        f: &mut dyn FnMut(u32) -> Expr,
        memo: &mut std::collections::HashMap<Expr, Expr>,
    ) -> Expr {
        if let Some(&e) = memo.get(&self) {
            return e;
        }
        let out = match self.kind() {
            ExprKind::Const(_) => self,
            ExprKind::Var(v) => f(v),
            ExprKind::Bin(op, a, b) => {
                let a = a.substitute_memo(f, memo);
                let b = b.substitute_memo(f, memo);
                Expr::apply(op, a, b)
            }
        };
        memo.insert(self, out);
        out
    }
    /// Renumbers variables: `v` becomes `map(v)`.
    pub fn rename(self, map: &dyn Fn(u32) -> u32) -> Expr {
        self.substitute(&mut |v| Expr::var(map(v)))
    }
    /// Calls `f` on every variable occurring in the expression.
    pub fn visit_vars(self, f: &mut dyn FnMut(u32)) {
        match self.kind() {
            ExprKind::Const(_) => {}
            ExprKind::Var(v) => f(v),
            ExprKind::Bin(_, a, b) => {
                a.visit_vars(f);
                b.visit_vars(f);
            }
        }
    }
    /// Calls `f` once on each variable occurring in the expression, in index order (from
    /// the variable set kept with the node; a walk only past 63 variables).
    pub fn each_var(self, f: &mut dyn FnMut(u32)) {
        let mask = self.var_mask();
        if mask & (1u64 << 63) == 0 {
            let mut m = mask;
            while m != 0 {
                f(m.trailing_zeros());
                m &= m - 1;
            }
            return;
        }
        let mut seen = std::collections::BTreeSet::new();
        self.visit_vars(&mut |v| {
            seen.insert(v);
        });
        for v in seen {
            f(v);
        }
    }
    pub fn uses_var(self, v: u32) -> bool {
        let mask = self.var_mask();
        if v < 63 {
            return mask & (1u64 << v) != 0;
        }
        if mask & (1u64 << 63) == 0 {
            return false;
        }
        let mut found = false;
        self.visit_vars(&mut |w| found |= w == v);
        found
    }
    /// Whether the expression contains floordiv, ceildiv or mod (kept with the node: O(1)).
    pub fn has_div(self) -> bool {
        intern::meta(self.0).has_div
    }
    /// Whether the expression contains min or max (O(1)).
    pub fn has_min_max(self) -> bool {
        intern::meta(self.0).has_min_max
    }
    /// The variables used, as a bit set: bit v for variable v < 63; bit 63 stands for
    /// every variable of index 63 or more (O(1)).
    pub fn var_mask(self) -> u64 {
        intern::meta(self.0).vars
    }
    /// The simplifier's rank of the expression (`simplify::cost::Rank`), kept with the
    /// node: O(1) however often the subterms are shared.
    pub fn rank(self) -> Rank {
        intern::meta(self.0).rank
    }
    /// Number of nodes in the tree (shared subtrees counted each time).
    pub fn size(self) -> usize {
        match self.kind() {
            ExprKind::Bin(_, a, b) => 1 + a.size() + b.size(),
            _ => 1,
        }
    }
    /// Whether every divisor in the expression is a positive constant.
    pub fn divisors_are_positive_constants(self) -> bool {
        intern::meta(self.0).positive_divisors
    }
    /// The first division (`floordiv`, `ceildiv`, `mod`) whose divisor is the constant 0
    /// once canonical, as the parser sees it: such a term has no value at any point and
    /// cannot be read back ("the divisor of `floordiv` is zero"). Substituting a constant
    /// for a variable (`fold`, `compose`, pinned variables) can make one out of a divisor
    /// that was a variable. `None` when there is none (always for positive constants).
    pub fn zero_divisor(self) -> Option<Expr> {
        if !self.has_div() || self.divisors_are_positive_constants() {
            return None;
        }
        let mut seen = std::collections::HashSet::new();
        self.zero_divisor_in(&mut seen)
    }
    fn zero_divisor_in(self, seen: &mut std::collections::HashSet<Expr>) -> Option<Expr> {
        let ExprKind::Bin(op, a, b) = self.kind() else {
            return None;
        };
        if !self.has_div() || !seen.insert(self) {
            return None;
        }
        if let Some(z) = a.zero_divisor_in(seen).or_else(|| b.zero_divisor_in(seen)) {
            return Some(z);
        }
        (op.is_div_like() && canonical(b).as_const() == Some(0)).then_some(self)
    }
    /// Structural order, independent of interning history: variables (by index) first,
    /// then compound expressions, then constants. Used wherever order is printed.
    pub fn structural_cmp(self, other: Expr) -> Ordering {
        if self == other {
            return Ordering::Equal;
        }
        fn rank(k: &ExprKind) -> u8 {
            match k {
                ExprKind::Var(_) => 0,
                ExprKind::Bin(..) => 1,
                ExprKind::Const(_) => 2,
            }
        }
        let (ka, kb) = (self.kind(), other.kind());
        match rank(&ka).cmp(&rank(&kb)) {
            Ordering::Equal => {}
            o => return o,
        }
        match (ka, kb) {
            (ExprKind::Var(a), ExprKind::Var(b)) => a.cmp(&b),
            (ExprKind::Const(a), ExprKind::Const(b)) => a.cmp(&b),
            (ExprKind::Bin(oa, a1, a2), ExprKind::Bin(ob, b1, b2)) => {
                // Order compound terms by the first variable they mention so that printed sums
                // read in variable order, then by operator and operands.
                let fa = first_var(self);
                let fb = first_var(other);
                fa.cmp(&fb)
                    .then_with(|| oa.cmp(&ob))
                    .then_with(|| a1.structural_cmp(b1))
                    .then_with(|| a2.structural_cmp(b2))
            }
            _ => Ordering::Equal,
        }
    }
}

/// Rewrites every division by a negative constant into one by a positive constant, which
/// is the only kind the simplifier reasons with (`c > 0`):
///
/// ```text
/// x floordiv -c  =  (-x) floordiv c        floor(x / -c) = floor(-x / c)
/// x ceildiv -c   =  -(x floordiv c)        ceil(x / -c) = -floor(x / c)
/// x mod -c       =  -((-x) mod c)          x - (-c)·floor(x / -c) = -(-x - c·floor(-x / c))
/// ```
///
/// so `s0 floordiv -4 in [-6, -2]` becomes a constraint on `(-s0) floordiv 4`, and
/// `(s0 floordiv 3) floordiv -5` never fuses into `s0 floordiv -15` (the negation sits
/// between the two divisions). A divisor of `i64::MIN` (no positive counterpart) and
/// non-constant divisors are left as they are.
pub fn normalize_negative_divisors(e: Expr) -> Expr {
    if e.divisors_are_positive_constants() {
        return e; // nothing to rewrite (the commonest case, known from the node)
    }
    let mut memo = std::collections::HashMap::new();
    normalize_memo(e, &mut memo)
}

fn normalize_memo(e: Expr, memo: &mut std::collections::HashMap<Expr, Expr>) -> Expr {
    if let Some(&n) = memo.get(&e) {
        return n;
    }
    let out = match e.kind() {
        ExprKind::Const(_) | ExprKind::Var(_) => e,
        ExprKind::Bin(op, a, b) => {
            let a = normalize_memo(a, memo);
            let b = normalize_memo(b, memo);
            match (op, b.as_const()) {
                (Op::FloorDiv, Some(c)) if c < 0 && c != i64::MIN => {
                    Expr::bin(Op::FloorDiv, a.neg(), Expr::constant(-c))
                }
                (Op::CeilDiv, Some(c)) if c < 0 && c != i64::MIN => {
                    Expr::bin(Op::FloorDiv, a, Expr::constant(-c)).neg()
                }
                (Op::Mod, Some(c)) if c < 0 && c != i64::MIN => {
                    Expr::bin(Op::Mod, a.neg(), Expr::constant(-c)).neg()
                }
                _ => Expr::bin(op, a, b),
            }
        }
    };
    memo.insert(e, out);
    out
}

/// The smallest variable index in `e` (`u32::MAX`: none), kept with the node.
fn first_var(e: Expr) -> u32 {
    intern::meta(e.0).first_var
}

impl PartialOrd for Expr {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Expr {
    fn cmp(&self, other: &Self) -> Ordering {
        self.structural_cmp(*other)
    }
}
