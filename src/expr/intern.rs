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

use super::{ExprKind, Op};
use fxhash::FxHashMap as HashMap;
use std::sync::{LazyLock, RwLock};

/// Facts of a whole expression, kept beside its node.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Meta {
    /// `simplify::cost::Rank` of the expression (shared subtrees counted each time).
    pub rank: (u64, u64, u64, u64, u64),
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
            rank: (
                0,
                0,
                1,
                u64::from(c.is_some_and(|c| c < 0)),
                c.map_or(0, |c| c.unsigned_abs()),
            ),
            has_div: false,
            has_min_max: false,
            positive_divisors: true,
            vars,
            first_var,
        }
    }

    fn bin(op: Op, a: &Meta, b: &Meta, divisor: Option<i64>) -> Meta {
        let (ra, rb) = (a.rank, b.rank);
        let inner = if op.is_div_like() { ra.0 } else { 0 };
        Meta {
            rank: (
                op.weight().saturating_add(ra.0).saturating_add(rb.0),
                inner.saturating_add(ra.1).saturating_add(rb.1),
                1u64.saturating_add(ra.2).saturating_add(rb.2),
                ra.3.saturating_add(rb.3),
                ra.4.saturating_add(rb.4),
            ),
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

thread_local! {
    /// The ids this thread has interned or found, so that building a node it built before
    /// takes no lock.
    static KNOWN: std::cell::RefCell<HashMap<ExprKind, u32>> = Default::default();
}

/// The id of `kind`, adding it to the arena if it is new.
pub(crate) fn intern(kind: ExprKind) -> u32 {
    if let Some(id) = KNOWN.with(|k| k.borrow().get(&kind).copied()) {
        return id;
    }
    let id = intern_shared(kind);
    KNOWN.with(|k| k.borrow_mut().insert(kind, id));
    id
}

fn intern_shared(kind: ExprKind) -> u32 {
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

thread_local! {
    /// This thread's copy of the arena's first nodes: nodes never change once interned,
    /// so a copy stays valid, and reading it takes no lock (lookups are the commonest
    /// operation of the simplifier). Extended from the arena when an id is past its end.
    static MIRROR: std::cell::RefCell<Vec<(ExprKind, Meta)>> = const {
        std::cell::RefCell::new(Vec::new())
    };
}

fn with_node<T>(id: u32, f: impl Fn(&(ExprKind, Meta)) -> T) -> T {
    MIRROR.with(|m| {
        if let Some(n) = m.borrow().get(id as usize) {
            return f(n);
        }
        let mut m = m.borrow_mut();
        let arena = ARENA.read().unwrap_or_else(|e| e.into_inner());
        let have = m.len();
        m.extend_from_slice(&arena.nodes[have..]);
        f(&m[id as usize])
    })
}

/// The node behind an id handed out by [`intern`].
pub(crate) fn lookup(id: u32) -> ExprKind {
    with_node(id, |n| n.0)
}

/// The facts kept beside the node.
pub(crate) fn meta(id: u32) -> Meta {
    with_node(id, |n| n.1)
}

/// How many distinct expressions exist (for benchmarks and memory reports).
pub fn arena_size() -> usize {
    ARENA.read().unwrap_or_else(|e| e.into_inner()).nodes.len()
}
