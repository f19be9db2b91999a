//! The e-graph language: the five operators of indexing expressions over constants and
//! variables, and the conversions between [`Expr`] and egg's [`RecExpr`].
//!
//! ```text
//! d0 * 16 + d1 floordiv 8       (Expr, variables by index)
//! (+ (* v0 16) (floordiv v1 8)) (RecExpr<IxLang>)
//! ```

use crate::expr::{Expr, ExprKind, Op};
use egg::{define_language, Id, RecExpr};
use std::fmt;
use std::str::FromStr;

/// A variable of the map, by index (printed `v3` in patterns and debug output).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct VarRef(pub u32);

impl fmt::Display for VarRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

impl FromStr for VarRef {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        s.strip_prefix('v')
            .and_then(|n| n.parse().ok())
            .map(VarRef)
            .ok_or(())
    }
}

define_language! {
    /// Indexing expressions as e-graph nodes.
    pub enum IxLang {
        "+" = Add([Id; 2]),
        "*" = Mul([Id; 2]),
        "floordiv" = FloorDiv([Id; 2]),
        "ceildiv" = CeilDiv([Id; 2]),
        "mod" = Mod([Id; 2]),
        Num(i64),
        Var(VarRef),
        // Last, so the order of the nodes above (egg sorts nodes) is as before they came.
        "min" = Min([Id; 2]),
        "max" = Max([Id; 2]),
    }
}

impl IxLang {
    /// The binary operator of a node, if it has one.
    pub fn op(&self) -> Option<(Op, Id, Id)> {
        match *self {
            IxLang::Add([a, b]) => Some((Op::Add, a, b)),
            IxLang::Mul([a, b]) => Some((Op::Mul, a, b)),
            IxLang::FloorDiv([a, b]) => Some((Op::FloorDiv, a, b)),
            IxLang::CeilDiv([a, b]) => Some((Op::CeilDiv, a, b)),
            IxLang::Mod([a, b]) => Some((Op::Mod, a, b)),
            IxLang::Min([a, b]) => Some((Op::Min, a, b)),
            IxLang::Max([a, b]) => Some((Op::Max, a, b)),
            _ => None,
        }
    }
    /// The node `op(a, b)`.
    pub fn bin(op: Op, a: Id, b: Id) -> IxLang {
        match op {
            Op::Add => IxLang::Add([a, b]),
            Op::Mul => IxLang::Mul([a, b]),
            Op::FloorDiv => IxLang::FloorDiv([a, b]),
            Op::CeilDiv => IxLang::CeilDiv([a, b]),
            Op::Mod => IxLang::Mod([a, b]),
            Op::Min => IxLang::Min([a, b]),
            Op::Max => IxLang::Max([a, b]),
        }
    }
}

/// `e` as a RecExpr; its root is the last node.
pub fn to_rec(e: Expr) -> RecExpr<IxLang> {
    let mut rec = RecExpr::default();
    let mut memo = std::collections::HashMap::new();
    push(e, &mut rec, &mut memo);
    rec
}

fn push(e: Expr, rec: &mut RecExpr<IxLang>, memo: &mut std::collections::HashMap<Expr, Id>) -> Id {
    if let Some(&id) = memo.get(&e) {
        return id;
    }
    let node = match e.kind() {
        ExprKind::Const(c) => IxLang::Num(c),
        ExprKind::Var(v) => IxLang::Var(VarRef(v)),
        ExprKind::Bin(op, a, b) => {
            let a = push(a, rec, memo);
            let b = push(b, rec, memo);
            IxLang::bin(op, a, b)
        }
    };
    let id = rec.add(node);
    memo.insert(e, id);
    id
}

/// The expression rooted at node `root` of `rec` (exact: no folding).
/// Each node once, in order (a node's children come before it in a RecExpr): a shared
/// subterm is not walked once per path to it, and nothing recurses on the depth.
pub fn from_rec_at(rec: &RecExpr<IxLang>, root: Id) -> Expr {
    let nodes = rec.as_ref();
    let upto = usize::from(root);
    let mut out: Vec<Expr> = Vec::with_capacity(upto + 1);
    for n in &nodes[..=upto] {
        out.push(match *n {
            IxLang::Num(c) => Expr::constant(c),
            IxLang::Var(v) => Expr::var(v.0),
            ref n => {
                let (op, a, b) = n.op().expect("every other node is binary");
                Expr::bin(op, out[usize::from(a)], out[usize::from(b)])
            }
        });
    }
    out[upto]
}

/// The expression of a whole RecExpr (its root is the last node).
pub fn from_rec(rec: &RecExpr<IxLang>) -> Expr {
    let root = Id::from(rec.as_ref().len() - 1);
    from_rec_at(rec, root)
}
