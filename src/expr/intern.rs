//! Hash-consing arena for expressions: structurally equal expressions share one id, so
//! equality and hashing are O(1) and an `Expr` is a `Copy` handle.
//!
//! The arena is global and append-only (nodes are never freed): a workbench session builds
//! at most a few million nodes, and a global arena lets expressions cross threads (the
//! Jupyter kernel runs statements on a worker thread).

use super::ExprKind;
use fxhash::FxHashMap as HashMap;
use std::sync::{LazyLock, RwLock};

struct Arena {
    nodes: Vec<ExprKind>,
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
    {
        let arena = ARENA.read().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = arena.ids.get(&kind) {
            return id;
        }
    }
    let mut arena = ARENA.write().unwrap_or_else(|e| e.into_inner());
    if let Some(&id) = arena.ids.get(&kind) {
        return id;
    }
    let id = u32::try_from(arena.nodes.len()).expect("fewer than 2^32 interned expressions");
    arena.nodes.push(kind);
    arena.ids.insert(kind, id);
    id
}

/// The node behind an id handed out by [`intern`].
pub(crate) fn lookup(id: u32) -> ExprKind {
    let arena = ARENA.read().unwrap_or_else(|e| e.into_inner());
    arena.nodes[id as usize]
}

/// How many distinct expressions exist (for benchmarks and memory reports).
pub fn arena_size() -> usize {
    ARENA.read().unwrap_or_else(|e| e.into_inner()).nodes.len()
}
