//! Hash-consing arena for expressions: structurally equal expressions share one id, so
//! equality and hashing are O(1) and an `Expr` is a `Copy` handle.
//!
//! The arena is global and append-only (nodes are never freed): a workbench session builds
//! at most a few million nodes, and a global arena lets expressions cross threads (the
//! Jupyter kernel runs statements on a worker thread).
//!
//! Each node also carries facts computed once from its children when it is interned
//! ([`Meta`]): the simplifier's rank, whether a division occurs, the variables used. Maps
//! from fusions of reshapes share subterms many times over; walking the tree for these
//! facts cost time proportional to the printed size at every query.

use super::{rank_of_bin, rank_of_leaf, ExprKind, Op, Rank};
use fxhash::FxHashMap as HashMap;
use std::sync::{LazyLock, RwLock};

/// Facts of a whole expression, kept beside its node.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Meta {
    /// The expression's [`Rank`].
    pub rank: Rank,
    /// Whether a floordiv, ceildiv or mod occurs.
    pub has_div: bool,
    /// Whether a min or max occurs.
    pub has_min_max: bool,
    /// Whether every divisor is a positive constant.
    pub positive_divisors: bool,
    /// Bit v set when variable v (< 63) occurs; bit 63 when one of index 63 or more does.
    pub vars: u64,
    /// The smallest variable index that occurs (`u32::MAX`: none).
    pub first_var: u32,
}

impl Meta {
    fn leaf(kind: ExprKind) -> Meta {
        let (c, vars, first_var) = match kind {
            ExprKind::Const(c) => (Some(c), 0, u32::MAX),
            ExprKind::Var(v) => (None, 1u64 << v.min(63), v),
            ExprKind::Bin(..) => unreachable!("leaf of a leaf node"),
        };
        Meta {
            rank: rank_of_leaf(c),
            has_div: false,
            has_min_max: false,
            positive_divisors: true,
            vars,
            first_var,
        }
    }

    fn bin(op: Op, a: &Meta, b: &Meta, divisor: Option<i64>) -> Meta {
        Meta {
            rank: rank_of_bin(op, a.rank, b.rank),
            has_div: op.is_div_like() || a.has_div || b.has_div,
            has_min_max: op.is_min_max() || a.has_min_max || b.has_min_max,
            positive_divisors: (!op.is_div_like() || divisor.is_some_and(|c| c > 0))
                && a.positive_divisors
                && b.positive_divisors,
            vars: a.vars | b.vars,
            first_var: a.first_var.min(b.first_var),
        }
    }
}

struct Arena {
    nodes: Vec<(ExprKind, Meta)>,
    ids: HashMap<ExprKind, u32>,
}

static ARENA: LazyLock<RwLock<Arena>> = LazyLock::new(|| {
    RwLock::new(Arena {
        nodes: Vec::new(),
        ids: HashMap::default(),
    })
});

/// The id of `kind`, adding it to the arena if it is new.
pub(crate) fn intern(kind: ExprKind) -> u32 {
    let meta = {
        let arena = ARENA.read().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = arena.ids.get(&kind) {
            return id;
        }
        match kind {
            ExprKind::Bin(op, a, b) => {
                let (_, ma) = &arena.nodes[a.id() as usize];
                let (kb, mb) = &arena.nodes[b.id() as usize];
                let divisor = match kb {
                    ExprKind::Const(c) => Some(*c),
                    _ => None,
                };
                Meta::bin(op, ma, mb, divisor)
            }
            leaf => Meta::leaf(leaf),
        }
    };
    let mut arena = ARENA.write().unwrap_or_else(|e| e.into_inner());
    if let Some(&id) = arena.ids.get(&kind) {
        return id;
    }
    let id = u32::try_from(arena.nodes.len()).expect("fewer than 2^32 interned expressions");
    arena.nodes.push((kind, meta));
    arena.ids.insert(kind, id);
    id
}

/// The node behind an id handed out by [`intern`].
pub(crate) fn lookup(id: u32) -> ExprKind {
    ARENA.read().unwrap_or_else(|e| e.into_inner()).nodes[id as usize].0
}

/// The facts kept beside the node.
pub(crate) fn meta(id: u32) -> Meta {
    ARENA.read().unwrap_or_else(|e| e.into_inner()).nodes[id as usize].1
}

/// How many distinct expressions exist (for benchmarks and memory reports).
pub fn arena_size() -> usize {
    ARENA.read().unwrap_or_else(|e| e.into_inner()).nodes.len()
}
