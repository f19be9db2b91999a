//! `reshape`: linearize the index over one shape, delinearize it over the other. The
//! floordiv/mod of the linear index are simplified as they are built ([`div`], [`rem`]):
//! terms whose coefficient is a multiple of the divisor leave the division, and terms too
//! small to carry into the next digit vanish, so collapses, expansions and generic
//! reshapes come out in XLA's form without a general simplifier.
//!
//! ```text
//! reshape = f32[32] reshape(f32[4,8] p0)      output → operand 0:  (d0) -> (d0 floordiv 8, d0 mod 8)
//! reshape = f32[2,4,4] reshape(f32[4,8] p0)   output → operand 0:
//!     (d0, d1, d2) -> (d0 * 2 + d1 floordiv 2, (d1 mod 2) * 4 + d2)
//! ```

use super::{build, c, want_operands, Cx, Family};
use crate::expr::Expr;
use crate::map::IndexingMap;

pub static FAMILY: Family = Family {
    name: "reshape",
    check,
    out_to_in,
    in_to_out,
    approximate: None,
};

fn check(cx: &Cx) -> Result<(), String> {
    same_element_count(cx, "reshape")
}

/// The check of ops that only reinterpret the elements (reshape, bitcast): one operand with
/// as many elements as the output.
pub(super) fn same_element_count(cx: &Cx, op: &str) -> Result<(), String> {
    want_operands(cx, 1)?;
    let a = cx.operand(0).shape.num_elements();
    let b = cx.instr.shape.num_elements();
    // a count past 2^63 is its own error, not a mismatch (identical shapes "differ" else)
    for (what, shape, n) in [
        (
            format!("operand 0 (`{}`)", cx.operand(0).name),
            &cx.operand(0).shape,
            a,
        ),
        ("the output".to_string(), &cx.instr.shape, b),
    ] {
        if n.is_none() {
            return Err(format!(
                "{what} has shape {shape}, whose number of elements does not fit in 64 bits"
            ));
        }
    }
    if a != b {
        return Err(format!(
            "a {op} keeps the number of elements, but operand 0 (`{}`) has shape {} and the output {}",
            cx.operand(0).name,
            cx.operand(0).shape,
            cx.instr.shape
        ));
    }
    Ok(())
}

fn out_to_in(cx: &Cx) -> Vec<IndexingMap> {
    vec![reshape_map(cx.out(), cx.opd(0))]
}

fn in_to_out(cx: &Cx, _: usize) -> IndexingMap {
    reshape_map(cx.opd(0), cx.out())
}

/// A sum `Σ coeff · atom` of non-negative atoms, each with its largest value.
#[derive(Clone, Debug)]
pub struct Terms(pub Vec<(Expr, i64, i64)>);

impl Terms {
    fn max(&self) -> i64 {
        self.0
            .iter()
            .fold(0i64, |a, &(_, k, m)| a.saturating_add(k.saturating_mul(m)))
    }
    pub fn to_expr(&self) -> Expr {
        self.0
            .iter()
            .fold(c(0), |acc, &(e, k, _)| acc.add(e.mul(c(k))))
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

/// Splits `t` (not divisible parts) into a prefix of big terms and a remainder that is
/// smaller than `g = gcd(s, big coefficients)`; returns (big, rest, g).
fn split(t: &[(Expr, i64, i64)], s: i64) -> (Vec<(Expr, i64, i64)>, Vec<(Expr, i64, i64)>, i64) {
    let mut sorted = t.to_vec();
    sorted.sort_by(|a, b| b.1.cmp(&a.1));
    for cut in 1..=sorted.len() {
        let g = sorted[..cut].iter().fold(s, |g, &(_, k, _)| gcd(g, k));
        let rest = Terms(sorted[cut..].to_vec());
        if rest.max() < g {
            return (sorted[..cut].to_vec(), sorted[cut..].to_vec(), g);
        }
    }
    (sorted, vec![], 1)
}

/// `t floordiv s` for `s > 0`.
pub fn div(t: &Terms, s: i64) -> Terms {
    let (whole, part): (Vec<_>, Vec<_>) = t.0.iter().partition(|&&(_, k, _)| k % s == 0);
    let mut out: Vec<(Expr, i64, i64)> = whole.iter().map(|&&(e, k, m)| (e, k / s, m)).collect();
    let part: Vec<(Expr, i64, i64)> = part.into_iter().copied().collect();
    if Terms(part.clone()).max() < s {
        return Terms(out);
    }
    let (big, _rest, g) = split(&part, s);
    let inner = Terms(big.iter().map(|&(e, k, m)| (e, k / g, m)).collect());
    let sg = s / g;
    let max = inner.max() / sg;
    out.push((inner.to_expr().floordiv(c(sg)), 1, max));
    Terms(out)
}

/// `t mod s` for `s > 0`.
pub fn rem(t: &Terms, s: i64) -> Terms {
    let part: Vec<(Expr, i64, i64)> =
        t.0.iter()
            .filter(|&&(_, k, _)| k % s != 0)
            .copied()
            .collect();
    if Terms(part.clone()).max() < s {
        return Terms(part);
    }
    let (big, rest, g) = split(&part, s);
    let inner = Terms(big.iter().map(|&(e, k, m)| (e, k / g, m)).collect());
    let sg = s / g;
    let mut out = vec![(inner.to_expr().modulo(c(sg)), g, sg - 1)];
    out.extend(rest);
    Terms(out)
}

/// Row-major strides of `dims` (checked: shapes were validated to fit in i64).
pub fn strides(dims: &[i64]) -> Vec<i64> {
    let mut s = vec![1i64; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1].saturating_mul(dims[i + 1]);
    }
    s
}

/// Delinearizes the linear index `l` (a sum of terms) over `to` (row-major).
pub fn delinearize(l: &Terms, to: &[i64]) -> Vec<Expr> {
    let st = strides(to);
    (0..to.len())
        .map(|i| {
            let t = if i == 0 {
                div(l, st[0])
            } else {
                div(&rem(l, st[i].saturating_mul(to[i])), st[i])
            };
            t.to_expr()
        })
        .collect()
}

/// The linear index of `atoms` (one per dimension of `dims`, each in `[0, dims[i] - 1]`).
pub fn linearize(atoms: &[Expr], dims: &[i64]) -> Terms {
    let st = strides(dims);
    Terms(
        atoms
            .iter()
            .zip(dims)
            .zip(&st)
            .filter(|((_, &n), _)| n > 1)
            .map(|((&e, &n), &s)| (e, s, n - 1))
            .collect(),
    )
}

/// The map from an index of `from` to the index of `to` with the same row-major position.
pub fn reshape_map(from: &[i64], to: &[i64]) -> IndexingMap {
    // No elements: nothing to linearize (and a zero extent would be a zero stride).
    if super::has_zero(from) || super::has_zero(to) {
        return super::empty_map(from, to.len());
    }
    let atoms: Vec<Expr> = (0..from.len()).map(super::d).collect();
    let l = linearize(&atoms, from);
    build(from, &[], &[], delinearize(&l, to), vec![])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(from: &[i64], to: &[i64], want: &str) {
        let m = reshape_map(from, to);
        assert_eq!(m.to_string(), want);
        // Brute force: every index maps to the one with the same linear position.
        let sf = strides(from);
        let stt = strides(to);
        let total: i64 = from.iter().product();
        for lin in 0..total {
            let p: Vec<i64> = sf.iter().zip(from).map(|(&s, &n)| (lin / s) % n).collect();
            let got = m.eval_point(&p).unwrap().unwrap();
            let want: Vec<i64> = stt.iter().zip(to).map(|(&s, &n)| (lin / s) % n).collect();
            assert_eq!(got, want, "at {p:?}");
        }
    }

    #[test]
    fn seed_reshapes() {
        check(
            &[32],
            &[4, 8],
            "(d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 31]",
        );
        check(
            &[4, 8],
            &[32],
            "(d0, d1) -> (d0 * 8 + d1), domain: d0 in [0, 3], d1 in [0, 7]",
        );
        check(
            &[2, 4, 4],
            &[4, 8],
            "(d0, d1, d2) -> (d0 * 2 + d1 floordiv 2, (d1 mod 2) * 4 + d2), domain: d0 in [0, 1], d1 in [0, 3], d2 in [0, 3]",
        );
        check(
            &[4, 8],
            &[2, 4, 4],
            "(d0, d1) -> (d0 floordiv 2, (d0 mod 2) * 2 + d1 floordiv 4, d1 mod 4), domain: d0 in [0, 3], d1 in [0, 7]",
        );
        check(
            &[32, 3, 4],
            &[4, 8, 12],
            "(d0, d1, d2) -> (d0 floordiv 8, d0 mod 8, d1 * 4 + d2), domain: d0 in [0, 31], d1 in [0, 2], d2 in [0, 3]",
        );
    }

    #[test]
    fn odd_reshapes_are_exact() {
        for (a, b) in [
            (&[6, 5][..], &[5, 6][..]),
            (&[3, 4, 5], &[10, 6]),
            (&[1, 12, 1], &[2, 1, 6]),
            (&[7], &[7]),
        ] {
            let m = reshape_map(a, b);
            let sf = strides(a);
            let stt = strides(b);
            for lin in 0..a.iter().product::<i64>() {
                let p: Vec<i64> = sf.iter().zip(a).map(|(&s, &n)| (lin / s) % n).collect();
                let want: Vec<i64> = stt.iter().zip(b).map(|(&s, &n)| (lin / s) % n).collect();
                assert_eq!(m.eval_point(&p).unwrap().unwrap(), want);
            }
        }
    }
}
