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
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{LazyLock, Mutex};

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

/// The arena's nodes live in segments that never move once allocated: segment `k` holds
/// ids `[FIRST·(2^k − 1), FIRST·(2^(k+1) − 1))`, `FIRST·2^k` slots, allocated when the
/// first of its ids is handed out. A node is written once, before its id is handed out
/// (under the writer's lock), and never again, so reading a node by id takes no lock: the
/// reader got the id from `intern` (this thread, or another through whatever handed the
/// `Expr` over, which orders the write before the read), and the segment pointer is
/// published with release/acquire. Reads were an `RwLock` read (two atomic read-modify-
/// writes) per `Expr::kind`: 15% of the simplifier's time on the benchmark corpus.
const FIRST_BITS: u32 = 10;
const SEGMENTS: usize = 33 - FIRST_BITS as usize;

type Slot = (ExprKind, Meta);

static SEGS: [AtomicPtr<Slot>; SEGMENTS] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; SEGMENTS];

/// The segment of `id` and the index in it.
#[inline]
fn place(id: u32) -> (usize, usize) {
    let n = id as u64 + (1u64 << FIRST_BITS);
    let k = 63 - n.leading_zeros() - FIRST_BITS;
    (k as usize, (n - (1u64 << (k + FIRST_BITS))) as usize)
}

#[inline]
fn slot(id: u32) -> &'static Slot {
    let (k, i) = place(id);
    let seg = SEGS[k].load(Ordering::Acquire);
    assert!(!seg.is_null(), "an id handed out by intern");
    // SAFETY: `seg` points to a leaked allocation of `FIRST·2^k` slots that is never freed
    // nor moved; slot `i` (< that size by `place`) was written before `id` was handed out
    // and is never written again (see above).
    unsafe { &*seg.add(i) }
}

struct Writer {
    len: u32,
    ids: HashMap<ExprKind, u32>,
}

static WRITER: LazyLock<Mutex<Writer>> = LazyLock::new(|| {
    Mutex::new(Writer {
        len: 0,
        ids: HashMap::default(),
    })
});

thread_local! {
    /// This thread's ids of the nodes it interned or found: ids never change, so a copy
    /// spares the writer's lock on every `Expr::bin` of a node already known (the
    /// simplifier rebuilds the same sums over and over).
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
    let mut w = WRITER.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&id) = w.ids.get(&kind) {
        return id;
    }
    let meta = match kind {
        ExprKind::Bin(op, a, b) => {
            let (_, ma) = slot(a.id());
            let (kb, mb) = slot(b.id());
            let divisor = match kb {
                ExprKind::Const(c) => Some(*c),
                _ => None,
            };
            Meta::bin(op, ma, mb, divisor)
        }
        leaf => Meta::leaf(leaf),
    };
    let id = w.len;
    assert!(id < u32::MAX, "fewer than 2^32 interned expressions");
    let (k, i) = place(id);
    let mut seg = SEGS[k].load(Ordering::Acquire);
    if seg.is_null() {
        let size = 1usize << (k as u32 + FIRST_BITS);
        let mut v: Vec<std::mem::MaybeUninit<Slot>> = Vec::with_capacity(size);
        // SAFETY: MaybeUninit needs no initialization.
        unsafe { v.set_len(size) };
        seg = Box::leak(v.into_boxed_slice()).as_mut_ptr() as *mut Slot;
        SEGS[k].store(seg, Ordering::Release);
    }
    // SAFETY: slot `i` of segment `k` is in bounds and not yet handed out (ids are given in
    // order under the writer's lock), so no reader can be looking at it.
    unsafe { seg.add(i).write((kind, meta)) };
    w.len = id + 1;
    w.ids.insert(kind, id);
    id
}

/// The node behind an id handed out by [`intern`].
#[inline]
pub(crate) fn lookup(id: u32) -> ExprKind {
    slot(id).0
}

/// The facts kept beside the node.
#[inline]
pub(crate) fn meta(id: u32) -> Meta {
    slot(id).1
}

/// How many distinct expressions exist (for benchmarks and memory reports).
pub fn arena_size() -> usize {
    WRITER.lock().unwrap_or_else(|e| e.into_inner()).len as usize
}

#[cfg(test)]
mod tests {
    use super::place;

    #[test]
    fn segments_tile_the_ids() {
        assert_eq!(place(0), (0, 0));
        assert_eq!(place(1023), (0, 1023));
        assert_eq!(place(1024), (1, 0));
        assert_eq!(place(3071), (1, 2047));
        assert_eq!(place(3072), (2, 0));
        let (k, i) = place(u32::MAX - 1);
        assert!(k < super::SEGMENTS && i < (1usize << (k as u32 + super::FIRST_BITS)));
    }
}
