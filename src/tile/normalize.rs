//! Range-aware normal form for the expressions of a tile derivation.
//!
//! The tiler substitutes `d = t * size + e` into a map and must then see through
//! `floordiv` and `mod`. Two facts do the work, both exact for integers and a constant
//! divisor `c > 0`:
//!
//! ```text
//! split:    L = c * Q + R                  L floordiv c = Q + R floordiv c,  L mod c = R mod c
//!           and when R stays in [w*c, w*c + c - 1] over the bounds:
//!                                          L floordiv c = Q + w,             L mod c = R - w*c
//! aligned:  L = P + E, every term of P (the tile offset) a multiple of h, h divides c,
//!           E (the elements) in [0, h - 1]:
//!                                          L floordiv c = P floordiv c,     L mod c = P mod c + E
//! ```
//!
//! e.g. `(t0 * 16 + e) floordiv 8` with `e in [0, 7]` is `t0 * 2`, and `(t0 * 4 + e) mod 8`
//! with `e in [0, 3]` is `(t0 mod 2) * 4 + e`.

use crate::expr::{canonical, Expr, ExprKind, Linear, Op};
use crate::interval::{range_of, Interval};

/// What a variable of the derivation stands for.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Role {
    /// A tile index (`t0`): part of a tile's offset.
    Tile,
    /// A runtime value: part of a tile's offset.
    Runtime,
    /// An element within the tile (or a range variable): spans the tile.
    Elem,
}

/// The variables of a derivation: bounds and roles, by index.
pub struct Space<'a> {
    pub bounds: &'a [Interval],
    pub roles: &'a [Role],
}

impl Space<'_> {
    fn is_offset(&self, e: Expr) -> bool {
        let mut ok = true;
        e.visit_vars(&mut |v| ok &= self.roles.get(v as usize).is_some_and(|r| *r != Role::Elem));
        ok
    }
    fn range(&self, e: Expr) -> Interval {
        range_of(e, self.bounds)
    }
}

pub fn gcd(a: i64, b: i64) -> i64 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    i64::try_from(a).unwrap_or(i64::MAX)
}

/// The normal form of `e`: canonical, with every `floordiv`/`mod` by a constant reduced by
/// the two facts above wherever the bounds allow.
pub fn normalize(e: Expr, space: &Space) -> Expr {
    let out = match e.kind() {
        ExprKind::Const(_) | ExprKind::Var(_) => e,
        ExprKind::Bin(op, a, b) => {
            let a = normalize(a, space);
            let b = normalize(b, space);
            match (op, b.as_const()) {
                (Op::FloorDiv | Op::Mod, Some(c)) if c > 0 => divmod(op, a, c, space),
                // a ceildiv c = (a + c - 1) floordiv c
                (Op::CeilDiv, Some(c)) if c > 0 => divmod(
                    Op::FloorDiv,
                    canonical(a.add(Expr::constant(c - 1))),
                    c,
                    space,
                ),
                _ => Expr::apply(op, a, b),
            }
        }
    };
    canonical(out)
}

fn linear(terms: &[(Expr, i64)], constant: i64) -> Expr {
    Linear {
        terms: terms.iter().copied().filter(|t| t.1 != 0).collect(),
        constant,
    }
    .to_expr()
}

/// `a op c` for `op` in {floordiv, mod} and a constant `c > 0`, reduced.
fn divmod(op: Op, a: Expr, c: i64, space: &Space) -> Expr {
    let keep = || Expr::apply(op, a, Expr::constant(c));
    let Some(l) = Linear::of(a) else {
        return keep();
    };
    if c == 1 {
        return if op == Op::Mod { Expr::constant(0) } else { a };
    }
    // split: coefficients reduced into [0, c), and a second try with residues in (-c/2, c/2].
    for symmetric in [false, true] {
        let mut q_terms = Vec::new();
        let mut r_terms = Vec::new();
        let reduce = |k: i64| -> (i64, i64) {
            let r = k.rem_euclid(c);
            let r = if symmetric && r > c / 2 { r - c } else { r };
            ((k - r) / c, r)
        };
        for &(atom, k) in &l.terms {
            let (q, r) = reduce(k);
            q_terms.push((atom, q));
            r_terms.push((atom, r));
        }
        let (qk, rk) = reduce(l.constant);
        let r_expr = linear(&r_terms, rk);
        let range = space.range(r_expr);
        if range.is_full() || range.is_empty() {
            continue;
        }
        let w = crate::expr::arith::floor_div(range.lo, c);
        if w == crate::expr::arith::floor_div(range.hi, c) {
            let Some(wc) = w.checked_mul(c) else { continue };
            return match op {
                Op::FloorDiv => match qk.checked_add(w) {
                    Some(k) => linear(&q_terms, k),
                    None => keep(),
                },
                _ => match rk.checked_sub(wc) {
                    Some(k) => linear(&r_terms, k),
                    None => keep(),
                },
            };
        }
        if symmetric {
            break;
        }
        // Not collapsible: still drop the multiples of c from the numerator.
        let reduced = Expr::apply(op, r_expr, Expr::constant(c));
        let whole = match op {
            Op::FloorDiv => linear(&q_terms, qk).add(reduced),
            _ => reduced,
        };
        if r_expr != a {
            return aligned(op, r_expr, c, space).map_or(canonical(whole), |x| match op {
                Op::FloorDiv => canonical(linear(&q_terms, qk).add(x)),
                _ => x,
            });
        }
    }
    aligned(op, a, c, space).unwrap_or_else(keep)
}

/// The "aligned" fact: offset part a multiple of `h | c`, element part in `[0, h - 1]`.
/// Also reduces offset-only expressions by their common factor with `c`.
fn aligned(op: Op, a: Expr, c: i64, space: &Space) -> Option<Expr> {
    let l = Linear::of(a)?;
    let (mut p, mut e) = (Vec::new(), Vec::new());
    for &(atom, k) in &l.terms {
        if space.is_offset(atom) {
            p.push((atom, k));
        } else {
            e.push((atom, k));
        }
    }
    let g = p
        .iter()
        .fold(gcd(l.constant, c), |acc, &(_, k)| gcd(acc, k));
    if g <= 0 {
        return None;
    }
    // P / g op (c / g), scaled back for mod.
    let offset = |op: Op| -> Expr {
        let scaled: Vec<(Expr, i64)> = p.iter().map(|&(a, k)| (a, k / g)).collect();
        let inner = Expr::apply(op, linear(&scaled, l.constant / g), Expr::constant(c / g));
        match op {
            Op::Mod => canonical(inner.mul(Expr::constant(g))),
            _ => canonical(inner),
        }
    };
    if e.is_empty() {
        if g == 1 {
            return None;
        }
        return Some(offset(op));
    }
    let er = space.range(linear(&e, 0));
    if er.is_full() || er.lo < 0 || er.hi >= g {
        return None;
    }
    Some(match op {
        Op::FloorDiv => offset(Op::FloorDiv),
        _ => canonical(offset(Op::Mod).add(linear(&e, 0))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(i: u32) -> Expr {
        Expr::var(i)
    }
    fn c(k: i64) -> Expr {
        Expr::constant(k)
    }

    /// Enumerates the box and compares `e` with its normal form at every point.
    #[track_caller]
    fn check(e: Expr, bounds: &[Interval], roles: &[Role], expected: &str) {
        let space = Space { bounds, roles };
        let n = normalize(e, &space);
        let names: Vec<String> = (0..bounds.len()).map(|i| format!("v{i}")).collect();
        assert_eq!(crate::expr::display(n, &names).to_string(), expected);
        super::super::check::for_each_in_box(bounds, &mut |p| {
            assert_eq!(crate::expr::eval(e, p), crate::expr::eval(n, p), "at {p:?}");
            Ok(true)
        })
        .expect("small box");
    }

    #[test]
    fn whole_rows_split_the_quotient() {
        // (t * 16 + e) floordiv 8, e in [0, 7]  =>  t * 2
        let e = v(0).mul(c(16)).add(v(1)).floordiv(c(8));
        check(
            e,
            &[Interval::new(0, 3), Interval::new(0, 7)],
            &[Role::Tile, Role::Elem],
            "v0 * 2",
        );
        let m = v(0).mul(c(16)).add(v(1)).modulo(c(8));
        check(
            m,
            &[Interval::new(0, 3), Interval::new(0, 7)],
            &[Role::Tile, Role::Elem],
            "v1",
        );
    }

    #[test]
    fn small_aligned_tiles_stay_in_one_row() {
        let b = [Interval::new(0, 7), Interval::new(0, 3)];
        let r = [Role::Tile, Role::Elem];
        check(
            v(0).mul(c(4)).add(v(1)).floordiv(c(8)),
            &b,
            &r,
            "v0 floordiv 2",
        );
        check(
            v(0).mul(c(4)).add(v(1)).modulo(c(8)),
            &b,
            &r,
            "(v0 mod 2) * 4 + v1",
        );
    }

    #[test]
    fn unaligned_tiles_are_kept() {
        let b = [Interval::new(0, 3), Interval::new(0, 11)];
        let r = [Role::Tile, Role::Elem];
        check(
            v(0).mul(c(12)).add(v(1)).floordiv(c(8)),
            &b,
            &r,
            "v0 + (v0 * 4 + v1) floordiv 8",
        );
    }
}
