//! The canonical linear form: `Σ coeff·atom + constant`, atoms being variables, products of
//! non-constant expressions, and floordiv/ceildiv/mod terms (whose operands are themselves
//! canonical). Constants are folded, like terms collected, terms ordered structurally
//! (variables by index first), zero terms dropped.
//!
//! ```text
//! 3 + d1 * 2 + (d0 - d0) + d1      =>  d1 * 3 + 3
//! (d0 * 8 + d1 * 16) floordiv 8    =>  d0 + d1 * 2        (every coefficient divisible)
//! ```
//!
//! Every map passes through [`canonical`], so maps that differ only in the order of
//! their terms are the same map, and printing is stable.

use super::{Expr, ExprKind, Op};

/// `Σ terms[i].1 · terms[i].0 + constant`, terms in structural order, no zero coefficient.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Linear {
    pub terms: Vec<(Expr, i64)>,
    pub constant: i64,
}

impl Linear {
    pub fn constant(c: i64) -> Linear {
        Linear {
            terms: Vec::new(),
            constant: c,
        }
    }
    pub fn is_constant(&self) -> bool {
        self.terms.is_empty()
    }

    /// The linear form of `e` with canonical atoms; `None` when a coefficient or the
    /// constant does not fit in 64 bits. Sums and products are accumulated exactly (in
    /// 128 bits, checked), so an intermediate value past 64 bits that cancels out, as in
    /// `d0 - -9223372036854775808 + -12` (`d0 + 9223372036854775796`), is no overflow.
    pub fn of(e: Expr) -> Option<Linear> {
        // An expression whose canonical form is known already: read off that form's
        // top-level sum (`Linear::of(x)` is `Linear::of(canonical(x))`, `None` alike),
        // rather than walk `e` again; the simplifier asks for the linear form of the
        // same canonical results and constraints pass after pass.
        if matches!(e.kind(), ExprKind::Bin(..)) {
            if let Some(c) = CANONICAL.with(|m| m.borrow().get(&e).copied()) {
                let l = c.map(Linear::of_canonical);
                debug_assert_eq!(l, Linear::of_walked(e));
                return l;
            }
        }
        Linear::of_walked(e)
    }

    /// [`Linear::of`] by a walk of `e`.
    fn of_walked(e: Expr) -> Option<Linear> {
        // (room for a typical sum up front: grown from nothing, the vector was allocated
        // up to three times per walk)
        let mut acc = Vec::with_capacity(8);
        let mut constant = 0i128;
        collect(e, 1, &mut acc, &mut constant)?;
        finish(acc, constant)
    }

    /// [`Linear::of`] of an expression already in canonical form ([`canonical`]'s output),
    /// read off its top-level sum without walking into its atoms: a canonical form is a
    /// left-nested sum of terms `atom` or `atom * k` (an atom is never a sum, and a
    /// product atom has no constant operand), then the constant.
    fn of_canonical(e: Expr) -> Linear {
        // (its terms counted first: one allocation of the right size, where pushing grew
        // the vector two or three times; the spine is read twice, a few loads)
        let mut n = 1;
        let mut x = e;
        while let ExprKind::Bin(Op::Add, a, _) = x.kind() {
            n += 1;
            x = a;
        }
        let mut terms = Vec::with_capacity(n);
        let mut constant = 0;
        let mut x = e;
        loop {
            let (rest, t) = match x.kind() {
                ExprKind::Bin(Op::Add, a, b) => (Some(a), b),
                _ => (None, x),
            };
            match t.kind() {
                ExprKind::Const(c) => constant = c,
                ExprKind::Bin(Op::Mul, a, b) => match b.kind() {
                    ExprKind::Const(k) => terms.push((a, k)),
                    _ => terms.push((t, 1)),
                },
                _ => terms.push((t, 1)),
            }
            match rest {
                Some(r) => x = r,
                None => break,
            }
        }
        terms.sort_by(|a, b| a.0.cmp(&b.0));
        Linear { terms, constant }
    }

    /// Whether every coefficient and the constant are divisible by `c`.
    pub fn divisible_by(&self, c: i64) -> bool {
        // wrapping_rem: `i64::MIN % -1` is 0 (the checked `%` panics on it)
        c != 0
            && self.constant.wrapping_rem(c) == 0
            && self.terms.iter().all(|&(_, k)| k.wrapping_rem(c) == 0)
    }

    /// Each coefficient divided by `c` (exact: call only when [`divisible_by`], with
    /// `c > 0`).
    pub fn div_exact(&self, c: i64) -> Linear {
        Linear {
            terms: self.terms.iter().map(|&(a, k)| (a, k / c)).collect(),
            constant: self.constant / c,
        }
    }

    /// [`div_exact`] for any non-zero `c`; `None` when a quotient overflows
    /// (`i64::MIN / -1`).
    pub fn checked_div_exact(&self, c: i64) -> Option<Linear> {
        Some(Linear {
            terms: self
                .terms
                .iter()
                .map(|&(a, k)| Some((a, k.checked_div(c)?)))
                .collect::<Option<_>>()?,
            constant: self.constant.checked_div(c)?,
        })
    }

    /// The expression `t1 + t2 + ... + constant`, left-nested, in print order: positive
    /// terms before negative ones (`d0 - d1 * 2`), larger coefficients (strides) first, as people write linearized indices (`d0 * 8 + d1`);
    /// ties in variable order, a plain variable before a compound term; the constant last.
    pub fn to_expr(&self) -> Expr {
        // (sorted in a copy on the stack when small: no allocation per call)
        let mut small = [(Expr(0), 0i64); 8];
        let mut large = Vec::new();
        let terms: &mut [(Expr, i64)] = if self.terms.len() <= small.len() {
            small[..self.terms.len()].copy_from_slice(&self.terms);
            &mut small[..self.terms.len()]
        } else {
            large.extend_from_slice(&self.terms);
            &mut large
        };
        terms.sort_by(|&(a, ka), &(b, kb)| {
            (ka < 0)
                .cmp(&(kb < 0))
                .then_with(|| kb.unsigned_abs().cmp(&ka.unsigned_abs()))
                .then_with(|| a.cmp(&b))
                .then_with(|| kb.cmp(&ka))
        });
        let mut out: Option<Expr> = None;
        for &(atom, k) in terms.iter() {
            let term = if k == 1 {
                atom
            } else {
                Expr::bin(Op::Mul, atom, Expr::constant(k))
            };
            out = Some(match out {
                None => term,
                Some(acc) => Expr::bin(Op::Add, acc, term),
            });
        }
        match out {
            None => Expr::constant(self.constant),
            Some(acc) if self.constant == 0 => acc,
            Some(acc) => Expr::bin(Op::Add, acc, Expr::constant(self.constant)),
        }
    }
}

/// Adds `k · e` to `acc` and `constant`. A product or division's operands are taken
/// through their memoized canonical forms ([`canonical_opt`]), never walked again here, so
/// the work is linear in the size of the term however deeply its products nest
/// (`----d0`, `d0 * 1 * 1 * ... * 1`).
fn collect(e: Expr, k: i128, acc: &mut Acc, constant: &mut i128) -> Option<()> {
    match e.kind() {
        ExprKind::Const(c) => {
            *constant = constant.checked_add(i128::from(c).checked_mul(k)?)?;
        }
        ExprKind::Var(_) => add_term(acc, e, k)?,
        ExprKind::Bin(Op::Add, a, b) => {
            collect(a, k, acc, constant)?;
            collect(b, k, acc, constant)?;
        }
        ExprKind::Bin(Op::Mul, a, b) => {
            // (read off the canonical forms' top-level sums in place: a canonical form is
            // `to_expr` of its own linear form, so no `Linear` is built nor rebuilt)
            let (ca, cb) = (canonical_opt(a)?, canonical_opt(b)?);
            if let Some(c) = ca.as_const() {
                add_scaled_canonical(cb, k.checked_mul(c.into())?, acc, constant)?;
            } else if let Some(c) = cb.as_const() {
                add_scaled_canonical(ca, k.checked_mul(c.into())?, acc, constant)?;
            } else {
                let (x, y) = if ca <= cb { (ca, cb) } else { (cb, ca) };
                add_term(acc, Expr::bin(Op::Mul, x, y), k)?;
            }
        }
        ExprKind::Bin(op, a, b) if op.is_min_max() => {
            // min and max commute: operands in structural order, so that min(a, b) and
            // min(b, a) are one atom; min(a, a) is a.
            let la = lin_of_canonical(canonical_opt(a)?);
            let lb = lin_of_canonical(canonical_opt(b)?);
            if la.is_constant() && lb.is_constant() {
                let v = super::arith::apply(op, la.constant, lb.constant).ok()?;
                *constant = constant.checked_add(i128::from(v).checked_mul(k)?)?;
            } else if la == lb {
                add_scaled(&la, k, acc, constant)?;
            } else {
                let (x, y) = (la.to_expr(), lb.to_expr());
                let (x, y) = if x <= y { (x, y) } else { (y, x) };
                add_term(acc, Expr::bin(op, x, y), k)?;
            }
        }
        ExprKind::Bin(op, a, b) => {
            // the operands through their memoized canonical forms: a division's dividend
            // is walked once, not once per enclosing sum (`Linear::of(canonical(x))` is
            // `Linear::of(x)`: canonical forms are fixpoints)
            // (the canonical forms read in place, as for a product: the atom is the node
            // itself when its operands are canonical already)
            let (ca, cb) = (canonical_opt(a)?, canonical_opt(b)?);
            match (op, cb.as_const()) {
                (_, Some(c)) if c != 0 && ca.as_const().is_some() => {
                    let la = ca.as_const().unwrap_or(0);
                    let v = super::arith::apply(op, la, c).ok()?;
                    *constant = constant.checked_add(i128::from(v).checked_mul(k)?)?;
                }
                // Exact for any non-zero divisor: (c·A) floordiv c = (c·A) ceildiv c = A.
                (Op::FloorDiv | Op::CeilDiv, Some(c)) if c != 0 && divisible_canonical(ca, c) => {
                    let q = lin_of_canonical(ca).checked_div_exact(c)?;
                    add_scaled(&q, k, acc, constant)?;
                }
                (Op::Mod, Some(c)) if c != 0 && divisible_canonical(ca, c) => {}
                _ => {
                    let atom = if (ca, cb) == (a, b) {
                        e
                    } else {
                        Expr::bin(op, ca, cb)
                    };
                    add_term(acc, atom, k)?
                }
            }
        }
    }
    Some(())
}

/// Adds `k · l` to `acc` and `constant`.
fn add_scaled(l: &Linear, k: i128, acc: &mut Acc, constant: &mut i128) -> Option<()> {
    for &(atom, j) in &l.terms {
        add_term(acc, atom, i128::from(j).checked_mul(k)?)?;
    }
    *constant = constant.checked_add(i128::from(l.constant).checked_mul(k)?)?;
    Some(())
}

/// The terms of a canonical form's top-level sum (`atom` or `atom * k`, then the
/// constant), as [`Linear::of_canonical`] reads them, given to `f` one by one without
/// building a [`Linear`]: `f(Some(atom), k)` per term, `f(None, c)` for the constant (0
/// when there is none). Stops at the first `None` that `f` returns.
fn for_each_term_canonical(
    c: Expr,
    mut f: impl FnMut(Option<Expr>, i64) -> Option<()>,
) -> Option<()> {
    let mut x = c;
    let mut konst = 0;
    loop {
        let (rest, t) = match x.kind() {
            ExprKind::Bin(Op::Add, a, b) => (Some(a), b),
            _ => (None, x),
        };
        match t.kind() {
            ExprKind::Const(v) => konst = v,
            ExprKind::Bin(Op::Mul, a, b) => match b.kind() {
                ExprKind::Const(k) => f(Some(a), k)?,
                _ => f(Some(t), 1)?,
            },
            _ => f(Some(t), 1)?,
        }
        match rest {
            Some(r) => x = r,
            None => break,
        }
    }
    f(None, konst)
}

/// `add_scaled(&lin_of_canonical(c), k, ..)` without the `Linear`: each atom of a
/// canonical form is distinct, so each slot of `acc` gets one addition whatever the order
/// (the same sums, the same overflows).
fn add_scaled_canonical(c: Expr, k: i128, acc: &mut Acc, constant: &mut i128) -> Option<()> {
    for_each_term_canonical(c, |atom, j| {
        let v = i128::from(j).checked_mul(k)?;
        match atom {
            Some(a) => add_term(acc, a, v),
            None => {
                *constant = constant.checked_add(v)?;
                Some(())
            }
        }
    })
}

/// `lin_of_canonical(c).divisible_by(d)`, read in place.
fn divisible_canonical(c: Expr, d: i64) -> bool {
    d != 0 && for_each_term_canonical(c, |_, j| (j.wrapping_rem(d) == 0).then_some(())).is_some()
}

/// The atoms of a sum being collected, with their coefficients so far, in the order first
/// met (sums have few distinct atoms: a linear search beats a tree; each atom's partial
/// sums are taken in the order of its summands, as before, so an overflow is found alike).
type Acc = Vec<(Expr, i128)>;

fn add_term(acc: &mut Acc, atom: Expr, k: i128) -> Option<()> {
    match acc.iter_mut().find(|(a, _)| *a == atom) {
        Some(slot) => slot.1 = slot.1.checked_add(k)?,
        None => acc.push((atom, k)),
    }
    Some(())
}

/// The collected sum as a [`Linear`]: atoms in structural order, zero terms dropped;
/// `None` when a coefficient or the constant does not fit in 64 bits.
fn finish(mut acc: Acc, constant: i128) -> Option<Linear> {
    acc.retain(|&(_, c)| c != 0);
    acc.sort_by(|a, b| a.0.cmp(&b.0));
    // (collected into a vector of the right size: `collect::<Option<Vec<_>>>` cannot
    // know the length and grew it from nothing)
    let mut terms = Vec::with_capacity(acc.len());
    for (a, c) in acc {
        terms.push((a, i64::try_from(c).ok()?));
    }
    Some(Linear {
        terms,
        constant: i64::try_from(constant).ok()?,
    })
}

/// `Linear::of(c)` for `c` in canonical form (a memoized `canonical_opt` result): read off
/// its top-level sum ([`Linear::of_canonical`]) instead of walking every atom's operands
/// again, which made `Linear::of` quadratic in the nesting depth of divisions.
fn lin_of_canonical(c: Expr) -> Linear {
    debug_assert_eq!(Linear::of_canonical(c), Linear::of(c).expect("canonical"));
    Linear::of_canonical(c)
}

/// The canonical form of `e`; if canonicalization would overflow, `e` with its outer sum
/// re-associated to the left, terms in order (exact: sums are evaluated exactly), which is
/// how its printed text reads back, so such a map prints and sorts the same after a
/// round trip.
pub fn canonical(e: Expr) -> Expr {
    canonical_opt(e).unwrap_or_else(|| left_nested(e))
}

fn left_nested(e: Expr) -> Expr {
    let mut terms = Vec::new();
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        match x.kind() {
            ExprKind::Bin(Op::Add, a, b) => {
                stack.push(b);
                stack.push(a);
            }
            _ => terms.push(x),
        }
    }
    terms
        .into_iter()
        .reduce(|acc, t| Expr::bin(Op::Add, acc, t))
        .unwrap_or(e)
}

thread_local! {
    /// `canonical_opt` of every compound expression asked for on this thread (expressions
    /// are interned and never freed, so an entry never goes stale).
    static CANONICAL: std::cell::RefCell<fxhash::FxHashMap<Expr, Option<Expr>>> =
        Default::default();
}

/// Forgets the memo of [`canonical`] on this thread (`simplify` starts each map afresh, so
/// a map simplified twice, as the benchmark does, costs the same both times).
pub fn forget_canonical_forms() {
    CANONICAL.with(|m| {
        let mut m = m.borrow_mut();
        // `clear` walks the whole table: after one large map (a reshape chain), every
        // small map that follows paid for it, twice per `simplify`. A large table is
        // dropped instead.
        if m.capacity() > 256 {
            *m = Default::default();
        } else {
            m.clear();
        }
    });
}

/// `Linear::of(e).to_expr()`, memoized; `None` when a coefficient overflows.
fn canonical_opt(e: Expr) -> Option<Expr> {
    if !matches!(e.kind(), ExprKind::Bin(..)) {
        return Some(e);
    }
    if let Some(c) = CANONICAL.with(|m| m.borrow().get(&e).copied()) {
        return c;
    }
    let c = Linear::of_walked(e).map(|l| l.to_expr());
    CANONICAL.with(|m| {
        let mut m = m.borrow_mut();
        m.insert(e, c);
        // The form is its own canonical form (canonical forms are fixpoints: a unit test
        // says so, and `Linear::of`'s debug assertion checks every memoized read against
        // a walk): recorded too, so that the simplifier's passes, which canonicalize
        // what they built from canonical forms, and `Linear::of` of a canonical form,
        // read it off rather than walk it again.
        // So is every prefix of its top-level sum (`to_expr` of the first terms, in the
        // same order, without the constant): the pre-pass folds each prefix of a sum as
        // a node of its own and asks for its linear form, which a walk found anew each
        // time (quadratic in the length of the sum).
        let Some(c) = c else { return };
        let mut x = c;
        loop {
            if x != e && matches!(x.kind(), ExprKind::Bin(..)) {
                m.entry(x).or_insert(Some(x));
            }
            match x.kind() {
                ExprKind::Bin(Op::Add, a, _) => x = a,
                _ => break,
            }
        }
    });
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(i: u32) -> Expr {
        Expr::var(i)
    }
    fn c(v: i64) -> Expr {
        Expr::constant(v)
    }

    #[test]
    fn like_terms_are_collected_and_ordered() {
        let e = c(3).add(d(1).mul(c(2))).add(d(0).sub(d(0))).add(d(1));
        assert_eq!(
            canonical(e),
            Expr::bin(Op::Add, Expr::bin(Op::Mul, d(1), c(3)), c(3))
        );
    }

    #[test]
    fn canonical_is_idempotent_and_order_independent() {
        let a = d(0).mul(c(8)).add(d(1).floordiv(c(2)));
        let b = d(1).floordiv(c(2)).add(c(8).mul(d(0)));
        assert_eq!(canonical(a), canonical(b));
        assert_eq!(canonical(canonical(a)), canonical(a));
    }

    #[test]
    fn intermediate_values_past_64_bits_cancel() {
        // d0 - (-2^63) + -12 = d0 + (2^63 - 12)
        let e = d(0).add(Expr::bin(Op::Mul, c(i64::MIN), c(-1))).add(c(-12));
        assert_eq!(canonical(e), Expr::bin(Op::Add, d(0), c(i64::MAX - 11)));
        // i64::MIN mod -1 and i64::MIN floordiv -1 never panic
        let m = Expr::bin(Op::Mod, d(0).mul(c(i64::MIN)), c(-1));
        assert_eq!(canonical(m), c(0));
        let f = Expr::bin(Op::FloorDiv, d(0).add(c(i64::MIN)), c(-1));
        assert_eq!(canonical(f), f);
    }

    #[test]
    fn nested_negations_are_linear_work() {
        // 2^60 walks if each product re-canonicalised its operands
        let mut e = d(0);
        for _ in 0..60 {
            e = Expr::bin(Op::Mul, e, c(-1));
        }
        assert_eq!(canonical(e), d(0));
        let mut e = d(0);
        for _ in 0..61 {
            e = Expr::bin(Op::Mul, e, c(1));
        }
        assert_eq!(canonical(Expr::bin(Op::Mul, e, c(-1))), d(0).mul(c(-1)));
    }

    #[test]
    fn exact_division_folds() {
        let e = Expr::bin(Op::FloorDiv, d(0).mul(c(8)).add(d(1).mul(c(16))), c(8));
        assert_eq!(canonical(e), canonical(d(0).add(d(1).mul(c(2)))));
        let m = Expr::bin(Op::Mod, d(0).mul(c(8)), c(4));
        assert_eq!(canonical(m), c(0));
    }
}
