//! Inverting a map that is a bijection from its domain onto its image.
//!
//! Three cases, tried in order:
//!
//! 1. **Affine maps** (results linear in the dimensions): solve `y = A·x + c` exactly.
//!    With `det A = ±1` (a permutation, a skew like `(d0, d1) -> (d0 + d1, d0)`, a reverse)
//!    the inverse is again affine; otherwise each `x_i` is `(adj(A)·(y - c))_i floordiv det`
//!    under the constraint that the division is exact (`... mod det in [0, 0]`), which is how
//!    a strided slice inverts. Results beyond a full-rank subset become equality constraints.
//! 2. **Linearize/delinearize pairs** (reshapes): the candidate inverse is "linearize over the
//!    result box, delinearize over the dimension box", verified point by point.
//! 3. Otherwise, or when verification fails, an error says *why* the map is not a
//!    bijection: a dimension dropped or used twice, a symbol, two points with one image,
//!    an unreached point.
//!
//! ```text
//! inverse (d0, d1) -> (d0 + d1, d0), domain: d0 in [0, 3], d1 in [0, 4]
//!   = (d0, d1) -> (d1, d0 - d1), domain: d0 in [0, 7], d1 in [0, 3], d0 - d1 in [0, 4]
//! ```

use super::compiled::Compiled;
use super::{DomainPoints, IndexingMap, Limits, Variable};
use crate::expr::{Expr, ExprKind, Linear};
use crate::interval::Interval;
use crate::MapError;

/// Whether the results are the dimensions in some order, each once, with no symbols.
pub fn is_permutation(m: &IndexingMap) -> bool {
    if m.status != super::Status::Defined || m.has_symbols() || m.results.len() != m.dims.len() {
        return false;
    }
    let mut seen = vec![false; m.dims.len()];
    for r in &m.results {
        match r.as_var() {
            Some(v) if (v as usize) < seen.len() && !seen[v as usize] => seen[v as usize] = true,
            _ => return false,
        }
    }
    true
}

/// Whether `m` maps its domain one-to-one onto its image: every dimension point has one
/// result, and no two have the same. Decided exactly: by the closed-form inverse when one
/// is found, by a dimension that no result uses on a box domain, else by enumeration (one
/// sortable key per point: memory grows by 16 bytes a point, not by a hash entry).
///
/// An empty domain is a bijection (the empty function, onto the empty image), whether it
/// is KNOWN EMPTY or found empty by enumeration: the answer depends on the relation, not on
/// how much the simplifier saw. [`inverse`] agrees: it returns the empty inverse.
pub fn is_bijection(m: &IndexingMap, limits: &Limits) -> Result<bool, MapError> {
    match m.status {
        super::Status::Undefined => return Err(MapError::Undefined),
        super::Status::KnownEmpty => return Ok(true),
        super::Status::Defined => {}
    }
    let (m, _) = super::remove_unused_symbols(m);
    if m.status == super::Status::KnownEmpty {
        return Ok(true);
    }
    if m.constraints.is_empty() && dropped_dim(&m).is_some() {
        return Ok(false);
    }
    match find_collision(&m, limits) {
        Ok(why) => Ok(why.is_none()),
        // Too large to walk: a closed-form inverse still proves it.
        Err(e @ (MapError::TooLarge { .. } | MapError::Other(_))) => match inverse(&m, limits) {
            Ok(_) => Ok(true),
            // A result past 64 bits: say so, rather than that the domain is large.
            Err(o @ MapError::Overflow(_)) => Err(o),
            Err(_) => Err(e),
        },
        Err(e) => Err(e),
    }
}

/// A dimension that takes more than one value and that no result uses.
fn dropped_dim(m: &IndexingMap) -> Option<usize> {
    (0..m.dims.len())
        .find(|&i| !m.results.iter().any(|r| r.uses_var(i as u32)) && !m.dims[i].bounds.is_point())
}

/// Why `m` is not a one-to-one function, found by enumeration: two dimension points with
/// one image, or one dimension point with two. `None` when it is one-to-one.
fn find_collision(m: &IndexingMap, limits: &Limits) -> Result<Option<String>, MapError> {
    let nd = m.dims.len();
    let bounds = super::enumerate::narrowed_bounds(m);
    let ybox: Vec<Interval> = m
        .results
        .iter()
        .map(|&r| crate::interval::range_of(r, &bounds))
        .collect();
    let (Some(xkey), Some(ykey)) = (BoxKey::new(&bounds[..nd]), BoxKey::new(&ybox)) else {
        return Err(MapError::Other(
            "the results' range is too wide to check one-to-one by enumeration".into(),
        ));
    };
    let mut pairs: Vec<(u64, u64)> = Vec::new();
    let mut prev: Option<(Vec<i64>, Vec<i64>)> = None;
    let mut two_images: Option<String> = None;
    DomainPoints::for_each(m, limits, &mut |p, y| {
        let x = &p[..nd];
        if let Some((px, py)) = &prev {
            if px.as_slice() == x {
                if py.as_slice() != y {
                    two_images = Some(format!(
                        "{} maps to both {} and {}",
                        fmt_point(x),
                        fmt_point(py),
                        fmt_point(y)
                    ));
                    return Ok(false);
                }
                return Ok(true);
            }
        }
        prev = Some((x.to_vec(), y.to_vec()));
        let (Some(ky), Some(kx)) = (ykey.key(y), xkey.key(x)) else {
            return Err(MapError::Other(format!(
                "{} maps to {}, outside the range computed for the results; cannot check \
                 one-to-one",
                fmt_point(x),
                fmt_point(y)
            )));
        };
        pairs.push((ky, kx));
        Ok(true)
    })?;
    if two_images.is_some() {
        return Ok(two_images);
    }
    pairs.sort_unstable();
    Ok(pairs.windows(2).find(|w| w[0].0 == w[1].0).map(|w| {
        format!(
            "not injective: {} and {} both map to {}",
            fmt_point(&xkey.point(w[0].1)),
            fmt_point(&xkey.point(w[1].1)),
            fmt_point(&ykey.point(w[0].0))
        )
    }))
}

/// Points of a box as numbers `0..size` (row-major), when the size fits in 64 bits.
struct BoxKey {
    bounds: Vec<Interval>,
    strides: Vec<u64>,
}

impl BoxKey {
    fn new(bounds: &[Interval]) -> Option<BoxKey> {
        let mut strides = vec![0u64; bounds.len()];
        let mut size: u64 = 1;
        for (i, b) in bounds.iter().enumerate().rev() {
            strides[i] = size;
            size = size.checked_mul(b.size()?)?;
        }
        Some(BoxKey {
            bounds: bounds.to_vec(),
            strides,
        })
    }
    /// The number of a point of the box; `None` for a point outside it (checked, never a
    /// wrapped key).
    fn key(&self, p: &[i64]) -> Option<u64> {
        p.iter()
            .zip(&self.bounds)
            .zip(&self.strides)
            .try_fold(0u64, |acc, ((&v, b), &s)| {
                if !b.contains(v) {
                    return None;
                }
                let off = u64::try_from(i128::from(v) - i128::from(b.lo)).ok()?;
                acc.checked_add(off.checked_mul(s)?)
            })
    }
    fn point(&self, mut key: u64) -> Vec<i64> {
        self.bounds
            .iter()
            .zip(&self.strides)
            .map(|(b, &s)| {
                let q = key / s;
                key %= s;
                (b.lo as i128 + q as i128) as i64
            })
            .collect()
    }
}

fn not_bijective(why: impl Into<String>) -> MapError {
    MapError::NotBijective(why.into())
}

fn fmt_point(p: &[i64]) -> String {
    format!(
        "({})",
        p.iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The inverse of an empty map (a bijection, [`is_bijection`]): the empty map from the
/// results' space back to the dimensions, KNOWN EMPTY.
fn empty_inverse(m: &IndexingMap) -> IndexingMap {
    let dims = (0..m.results.len())
        .map(|k| Variable::new(format!("d{k}"), 0, 0))
        .collect();
    let mut out = IndexingMap::new(
        dims,
        vec![],
        vec![],
        vec![Expr::constant(0); m.dims.len()],
        vec![],
    );
    out.status = super::Status::KnownEmpty;
    out
}

/// Whether enumeration finds the domain empty (`false` when it has a point or is too
/// large to walk).
fn no_point(m: &IndexingMap, limits: &Limits) -> bool {
    let mut any = false;
    let walk = DomainPoints::for_each(m, limits, &mut |_, _| {
        any = true;
        Ok(false)
    });
    walk.is_ok() && !any
}

pub fn inverse(m: &IndexingMap, limits: &Limits) -> Result<IndexingMap, MapError> {
    match m.status {
        super::Status::Undefined => return Err(MapError::Undefined),
        super::Status::KnownEmpty => return Ok(empty_inverse(m)),
        super::Status::Defined => {}
    }
    // A symbol no result uses changes nothing: (d0)[s0] -> (d0) is (d0) -> (d0).
    let (m, _) = super::remove_unused_symbols(m);
    let m = &m;
    if m.is_known_empty() || (!m.constraints.is_empty() && no_point(m, limits)) {
        return Ok(empty_inverse(m));
    }
    // A variable with one value put in a divisor that becomes zero: no value anywhere.
    let bounds = m.bounds();
    let one_value = |v: u32| match bounds[v as usize] {
        b if b.is_point() => Expr::constant(b.lo),
        _ => Expr::var(v),
    };
    if let Some(term) = super::zeroed_division(m, &one_value) {
        return Err(MapError::Other(format!(
            "`{}` divides by zero at every point (its variables with one value put in), so \
             the map has no value to invert",
            m.show_expr(term)
        )));
    }
    let e = match closed_form(m, limits) {
        Ok(inv) => return Ok(inv),
        Err(e @ (MapError::NotBijective(_) | MapError::Other(_))) => e,
        Err(e) => return Err(e),
    };
    // Variables with one value per point (by their bounds, or solved from an equality
    // constraint) are constants or functions of the others: invert the map without them.
    if let Some((reduced, x_of)) = eliminate_pinned(m) {
        if let Some(z) = reduced.zero_divisor() {
            return Err(MapError::Other(format!(
                "`{}` divides by zero at every point once the variables with one value are \
                 put in, so the map has no value to invert",
                reduced.show_expr(z)
            )));
        }
        if let Ok(inv) = inverse(&reduced, limits) {
            return Ok(restore_pinned(&inv, &x_of));
        }
    }
    // No closed form: tell a map that is no bijection from one whose inverse ixmap cannot
    // write, point by point where the domain is small enough.
    match find_collision(m, limits) {
        Ok(Some(_)) if matches!(e, MapError::NotBijective(_)) => Err(e),
        Ok(Some(why)) => Err(not_bijective(why)),
        Ok(None) => {
            let why = match e {
                MapError::NotBijective(w) | MapError::Other(w) => w,
                _ => unreachable!(),
            };
            let why = why
                .strip_prefix("no closed-form inverse found: ")
                .unwrap_or(&why);
            Err(MapError::Other(format!(
                "no closed-form inverse found, though the map is a bijection (checked point \
                 by point): {why}"
            )))
        }
        Err(_) => Err(e),
    }
}

/// What `m`'s dimension `i` is in the inverse of the map without its pinned variables:
/// `Ok(j)` the reduced map's dimension `j`, `Err(f)` the expression `f` of the reduced
/// map's dimensions.
type PinnedDim = Result<u32, Expr>;

/// `m` without the variables that take one value per point: a variable whose bounds are
/// one value is that constant; one that an equality constraint `k·v + rest in [c, c]`
/// (`k` ±1, `v` nowhere else in it) solves is `k·(c - rest)`, and keeps its bounds as a
/// constraint on that expression. The domain of the reduced map is the projection of
/// `m`'s onto the dimensions kept, one to one (the others are functions of them), and its
/// results are the same there: its inverse, with the eliminated dimensions put back
/// ([`restore_pinned`]), is `m`'s. `None` when no variable is pinned.
fn eliminate_pinned(m: &IndexingMap) -> Option<(IndexingMap, Vec<PinnedDim>)> {
    let nd = m.dims.len();
    let n = m.num_vars();
    let bounds = m.bounds();
    let mut fixed: Vec<Option<Expr>> = (0..n)
        .map(|v| bounds[v].is_point().then(|| Expr::constant(bounds[v].lo)))
        .collect();
    let sub_fixed = |e: Expr, fixed: &[Option<Expr>]| {
        crate::expr::canonical(e.substitute(&mut |w| fixed[w as usize].unwrap_or(Expr::var(w))))
    };
    let mut results: Vec<Expr> = m.results.iter().map(|&r| sub_fixed(r, &fixed)).collect();
    let mut constraints: Vec<(Expr, Interval)> = m
        .constraints
        .iter()
        .map(|&(e, iv)| (sub_fixed(e, &fixed), iv))
        .collect();
    loop {
        let found = constraints.iter().enumerate().find_map(|(ci, &(e, iv))| {
            if !iv.is_point() {
                return None;
            }
            let lin = Linear::of(e)?;
            lin.terms
                .iter()
                .filter_map(|&(atom, k)| {
                    let v = atom.as_var()?;
                    let once = lin.terms.iter().filter(|(a, _)| a.uses_var(v)).count() == 1;
                    // A dimension must be a function of the other dimensions alone: one
                    // that a symbol moves is not determined by the point.
                    let of_dims = (v as usize) >= nd
                        || lin.terms.iter().all(|(a, _)| {
                            let mut dims_only = true;
                            a.each_var(&mut |w| dims_only &= (w as usize) < nd);
                            dims_only
                        });
                    ((k == 1 || k == -1) && once && of_dims).then_some((v, k))
                })
                .max_by_key(|&(v, _)| v) // a symbol first (they follow the dimensions)
                .map(|(v, k)| (ci, v, k))
        });
        let Some((ci, v, k)) = found else {
            break;
        };
        let (e, iv) = constraints.remove(ci);
        let rest = crate::expr::canonical(e.sub(Expr::var(v).mul(Expr::constant(k))));
        let f = crate::expr::canonical(Expr::constant(iv.lo).sub(rest).mul(Expr::constant(k)));
        let mut by: Vec<Option<Expr>> = vec![None; n];
        by[v as usize] = Some(f);
        for r in &mut results {
            *r = sub_fixed(*r, &by);
        }
        for c in &mut constraints {
            c.0 = sub_fixed(c.0, &by);
        }
        for g in fixed.iter_mut().flatten() {
            *g = sub_fixed(*g, &by);
        }
        if !bounds[v as usize].is_full() {
            constraints.push((f, bounds[v as usize]));
        }
        fixed[v as usize] = Some(f);
    }
    if fixed.iter().all(Option::is_none) {
        return None;
    }
    // Renumber what is left: kept dimensions, then kept range and runtime variables.
    let mut new_index: Vec<u32> = vec![u32::MAX; n];
    let mut next = 0u32;
    for v in 0..n {
        if fixed[v].is_none() {
            new_index[v] = next;
            next += 1;
        }
    }
    let rename = |e: Expr| e.rename(&|w| new_index[w as usize]);
    let keep = |range: std::ops::Range<usize>| -> Vec<Variable> {
        range
            .filter(|&v| fixed[v].is_none())
            .map(|v| m.var(v).clone())
            .collect()
    };
    let nr = m.ranges.len();
    let reduced = IndexingMap::new(
        keep(0..nd),
        keep(nd..nd + nr),
        keep(nd + nr..n),
        results.iter().map(|&r| rename(r)).collect(),
        constraints.iter().map(|&(e, iv)| (rename(e), iv)).collect(),
    );
    let x_of = (0..nd)
        .map(|i| match fixed[i] {
            None => Ok(new_index[i]),
            Some(f) => Err(rename(f)),
        })
        .collect();
    Some((reduced, x_of))
}

/// The inverse of `m` from the inverse `inv` of its reduced map ([`eliminate_pinned`]):
/// each eliminated dimension is its expression of the kept ones, at their inverse.
fn restore_pinned(inv: &IndexingMap, x_of: &[PinnedDim]) -> IndexingMap {
    let results = x_of
        .iter()
        .map(|x| match x {
            Ok(j) => inv.results[*j as usize],
            Err(f) => crate::expr::canonical(f.substitute(&mut |w| inv.results[w as usize])),
        })
        .collect();
    let mut out = IndexingMap::new(
        inv.dims.clone(),
        vec![],
        vec![],
        results,
        inv.constraints.clone(),
    );
    if inv.is_known_empty() {
        out.status = super::Status::KnownEmpty;
    }
    out
}

/// The closed forms of [`inverse`], on a map with a domain that is not known empty.
fn closed_form(m: &IndexingMap, limits: &Limits) -> Result<IndexingMap, MapError> {
    let nd = m.dims.len();
    for (i, v) in m.ranges.iter().chain(&m.runtimes).enumerate() {
        if !v.bounds.is_point() {
            let kind = m.var_kind(nd + i);
            return Err(not_bijective(format!(
                "{} `{}` in {} makes one point map to many",
                kind.describe(),
                v.name,
                v.bounds
            )));
        }
    }
    if m.has_symbols() {
        // Symbols fixed to one value each: substitute and invert the rest.
        let fixed: Vec<i64> = m
            .ranges
            .iter()
            .chain(&m.runtimes)
            .map(|v| v.bounds.lo)
            .collect();
        let by = |v: u32| {
            if (v as usize) < nd {
                Expr::var(v)
            } else {
                Expr::constant(fixed[v as usize - nd])
            }
        };
        if let Some(term) = super::zeroed_division(m, &by) {
            return Err(MapError::Other(format!(
                "`{}` divides by zero at every point (its symbols have one value each), so \
                 the map has no value to invert",
                m.show_expr(term)
            )));
        }
        let sub = |e: Expr| e.substitute(&mut |v| by(v));
        let plain = IndexingMap::new(
            m.dims.clone(),
            vec![],
            vec![],
            m.results.iter().map(|&r| sub(r)).collect(),
            m.constraints.iter().map(|&(e, iv)| (sub(e), iv)).collect(),
        );
        return inverse(&plain, limits);
    }
    // A dimension no result uses (and that takes more than one value) is dropped.
    if let Some(i) = dropped_dim(m) {
        let d = &m.dims[i];
        if m.constraints.is_empty() {
            return Err(not_bijective(format!(
                "dimension `{}` is dropped: no result uses it, so points that differ only in `{}` \
                 have the same image",
                d.name, d.name
            )));
        }
    }
    if let Some(inv) = affine_inverse(m)? {
        return Ok(inv);
    }
    if let Some(candidate) = mixed_radix_inverse(m)? {
        // Exact by construction; the check below only completes the domain.
        return complete(m, candidate, limits, true);
    }
    if let Some(candidate) = relation_candidate(m, limits)? {
        if let Ok(inv) = complete(m, candidate, limits, false) {
            return Ok(inv);
        }
    }
    let candidate = reshape_candidate(m, limits)?;
    complete(m, candidate, limits, false)
}

/// Case 3: linear relations between results and dimensions. Every domain point gives a row
/// `(y, x, 1)`; the integer vectors orthogonal to all rows are the relations
/// `w·y + a·x + c = 0` that hold on the whole domain. When the `a·x` of the relations can
/// be inverted (an affine or mixed-radix map of `x`), `x` is that inverse applied to
/// `-(w·y + c)`:
///
/// ```text
/// (d0) -> (d0 mod 2, d0 floordiv 2)       relation  y0 + 2·y1 - x0 = 0
///   = (d0, d1) -> (d0 + d1 * 2)
/// ```
fn relation_candidate(m: &IndexingMap, limits: &Limits) -> Result<Option<IndexingMap>, MapError> {
    let (nd, ny) = (m.dims.len(), m.results.len());
    // Columns: x first (so the echelon form below solves for x), then y, then 1.
    let k = nd + ny + 1;
    let mut basis: Vec<Vec<i128>> = (0..k)
        .map(|i| (0..k).map(|j| i128::from(i == j)).collect())
        .collect();
    let mut row = vec![0i128; k];
    let mut dots: Vec<i128> = Vec::with_capacity(k);
    let mut overflow = false;
    let walk = DomainPoints::for_each(m, limits, &mut |p, y| {
        for (r, &v) in row.iter_mut().zip(p[..nd].iter().chain(y)) {
            *r = v as i128;
        }
        row[k - 1] = 1;
        dots.clear();
        for v in &basis {
            let d = v
                .iter()
                .zip(&row)
                .try_fold(0i128, |acc, (&a, &b)| acc.checked_add(a.checked_mul(b)?));
            match d {
                Some(d) => dots.push(d),
                None => {
                    overflow = true;
                    return Ok(false);
                }
            }
        }
        let Some(pivot) = dots.iter().position(|&d| d != 0) else {
            return Ok(true);
        };
        let pv = basis.remove(pivot);
        let dp = dots[pivot];
        let mut next = Vec::with_capacity(basis.len());
        for (i, v) in basis.drain(..).enumerate() {
            let dv = dots[if i < pivot { i } else { i + 1 }];
            if dv == 0 {
                next.push(v);
                continue;
            }
            match combine(&v, dp, &pv, dv) {
                Some(w) => next.push(w),
                None => overflow = true,
            }
        }
        basis = next;
        Ok(!basis.is_empty() && !overflow)
    });
    match walk {
        Ok(()) => {}
        Err(MapError::TooLarge { .. }) => return Ok(None),
        Err(e) => return Err(e),
    }
    if overflow || basis.is_empty() {
        return Ok(None);
    }
    let rows = echelon(basis);
    // Keep the relations that involve x: a·x = -(w·y + c).
    let rels: Vec<&Vec<i128>> = rows
        .iter()
        .filter(|r| r[..nd].iter().any(|&a| a != 0))
        .collect();
    if rels.is_empty() {
        return Ok(None);
    }
    let to_i64 = |x: i128| i64::try_from(x).map_err(|_| MapError::Overflow("inverse".into()));
    let mut g_results = Vec::new();
    let mut z_of_y = Vec::new();
    for r in &rels {
        let mut ax = Expr::constant(0);
        for (i, &a) in r[..nd].iter().enumerate() {
            ax = ax.add(Expr::var(i as u32).mul(Expr::constant(to_i64(a)?)));
        }
        let mut z = Expr::constant(to_i64(-r[k - 1])?);
        for (j, &w) in r[nd..nd + ny].iter().enumerate() {
            z = z.add(Expr::var(j as u32).mul(Expr::constant(to_i64(-w)?)));
        }
        g_results.push(crate::expr::canonical(ax));
        z_of_y.push(crate::expr::canonical(z));
    }
    let g = IndexingMap::new(
        m.dims.clone(),
        vec![],
        vec![],
        g_results,
        m.constraints.clone(),
    );
    let ginv = match affine_inverse(&g) {
        Ok(Some(inv)) => inv,
        Ok(None) => match mixed_radix_inverse(&g)? {
            Some(inv) => inv,
            None => return Ok(None),
        },
        Err(MapError::NotBijective(_)) => return Ok(None),
        Err(e) => return Err(e),
    };
    let x_exprs: Vec<Expr> = ginv
        .results
        .iter()
        .map(|&e| crate::expr::canonical(e.substitute(&mut |v| z_of_y[v as usize])))
        .collect();
    // The conditions under which g's inverse is exact (divisibility), on z(y).
    let constraints = ginv
        .constraints
        .iter()
        .map(|&(e, iv)| (e.substitute(&mut |v| z_of_y[v as usize]), iv))
        .collect();
    Ok(Some(assemble(m, x_exprs, constraints, None)?))
}

/// `dp·v - dv·p`, divided by the gcd of its entries (`None` on overflow).
fn combine(v: &[i128], dp: i128, p: &[i128], dv: i128) -> Option<Vec<i128>> {
    let mut w = Vec::with_capacity(v.len());
    for (&a, &b) in v.iter().zip(p) {
        w.push(a.checked_mul(dp)?.checked_sub(b.checked_mul(dv)?)?);
    }
    let g = w.iter().fold(0i128, |g, &x| gcd(g, x.abs()));
    if g > 1 {
        for x in &mut w {
            *x /= g;
        }
    }
    Some(w)
}

/// Integer row echelon form (fraction-free, rows divided by their gcd, the leading entry
/// positive), so that each relation solves for a different leading variable.
fn echelon(mut rows: Vec<Vec<i128>>) -> Vec<Vec<i128>> {
    let k = rows.first().map_or(0, |r| r.len());
    let mut out: Vec<Vec<i128>> = Vec::new();
    for c in 0..k {
        let Some(p) = rows.iter().position(|r| r[c] != 0) else {
            continue;
        };
        let mut pv = rows.remove(p);
        if pv[c] < 0 {
            for x in &mut pv {
                *x = -*x;
            }
        }
        let mut rest = Vec::new();
        for r in rows.drain(..) {
            if r[c] == 0 {
                rest.push(r);
            } else if let Some(w) = combine(&r, pv[c], &pv, r[c]) {
                rest.push(w);
            }
        }
        // Clear column c in the rows above, too (reduced form).
        for o in &mut out {
            if o[c] != 0 {
                if let Some(w) = combine(o, pv[c], &pv, o[c]) {
                    *o = w;
                }
            }
        }
        rows = rest;
        out.push(pv);
    }
    out
}

/// Case 1b: each result is a mixed-radix linearization of its own dimensions, with any
/// signs and offsets: `y = c + Σ a_i·x_i` where, ordered by |a_i|, each |a| divides the
/// next and the next is at least |a| times the extent of its dimension (so no two points
/// collide). A negative coefficient counts that dimension down from its upper bound:
///
/// ```text
/// (d0, d1, d2) -> (-d0, d1 * 2 + d2), d_i in [0, 1]
///   = (d0, d1) -> (-d0, d1 floordiv 2, d1 mod 2)
/// ```
fn mixed_radix_inverse(m: &IndexingMap) -> Result<Option<IndexingMap>, MapError> {
    let nd = m.dims.len();
    let mut owner: Vec<Option<usize>> = vec![None; nd];
    let mut forms: Vec<Linear> = Vec::new();
    for (j, &r) in m.results.iter().enumerate() {
        let Some(lin) = Linear::of(r) else {
            return Ok(None);
        };
        for &(atom, _) in &lin.terms {
            match atom.kind() {
                ExprKind::Var(v) if (v as usize) < nd && owner[v as usize].is_none() => {
                    owner[v as usize] = Some(j)
                }
                _ => return Ok(None),
            }
        }
        forms.push(lin);
    }
    if owner.iter().any(Option::is_none) {
        return Ok(None);
    }
    let overflow = || MapError::Overflow("inverse".into());
    let mut x_exprs = vec![Expr::constant(0); nd];
    let mut constraints: Vec<(Expr, Interval)> = Vec::new();
    for (j, lin) in forms.iter().enumerate() {
        // y_j - c with each term shifted to count from 0: u = Σ |a_i| * t_i, where t_i is
        // x_i - lo_i for a positive a_i and hi_i - x_i for a negative one.
        let mut terms: Vec<(u32, i64)> = lin
            .terms
            .iter()
            .map(|&(atom, k)| (atom.as_var().unwrap_or(0), k))
            .collect();
        terms.sort_by_key(|&(v, k)| (k.unsigned_abs(), v));
        let mut shift: i64 = lin.constant;
        for &(v, k) in &terms {
            let b = m.dims[v as usize].bounds;
            if b.is_full() {
                return Ok(None);
            }
            let base = if k > 0 { b.lo } else { b.hi };
            shift = k
                .checked_mul(base)
                .and_then(|x| shift.checked_add(x))
                .ok_or_else(overflow)?;
        }
        let u = Expr::var(j as u32).add(Expr::constant(shift.checked_neg().ok_or_else(overflow)?));
        let first = terms.first().map_or(1, |&(_, k)| k.unsigned_abs());
        let first = i64::try_from(first).map_err(|_| overflow())?;
        if first > 1 {
            constraints.push((
                crate::expr::canonical(u.modulo(Expr::constant(first))),
                Interval::point(0),
            ));
        }
        for (idx, &(v, k)) in terms.iter().enumerate() {
            let b = m.dims[v as usize].bounds;
            let a = i64::try_from(k.unsigned_abs()).map_err(|_| overflow())?;
            let extent = b
                .size()
                .and_then(|s| i64::try_from(s).ok())
                .ok_or_else(overflow)?;
            let mut t = u.floordiv(Expr::constant(a));
            if let Some(&(_, next)) = terms.get(idx + 1) {
                let next = i64::try_from(next.unsigned_abs()).map_err(|_| overflow())?;
                if next % a != 0 || next / a < extent {
                    return Ok(None);
                }
                t = t.modulo(Expr::constant(next / a));
            }
            x_exprs[v as usize] = crate::expr::canonical(if k > 0 {
                t.add(Expr::constant(b.lo))
            } else {
                Expr::constant(b.hi).sub(t)
            });
        }
    }
    Ok(Some(assemble(m, x_exprs, constraints, None)?))
}

/// Result bounds: exact by enumeration when small, else by intervals (exact for a result
/// linear in the dimensions, over their box).
///
/// The inverse's dimensions range over these bounds, so a result that takes a value past
/// 64 bits is an error here: its image has a point no dimension can hold, and saturating
/// the bound would drop it silently (`(d0) -> (-d0)` on `[-2^63, 0]` reaches 2^63).
fn result_bounds(m: &IndexingMap, limits: &Limits) -> Result<Vec<Interval>, MapError> {
    let mut exact: Vec<Interval> = vec![Interval::new(1, 0); m.results.len()];
    let ok = DomainPoints::for_each(m, limits, &mut |_, r| {
        for (b, &v) in exact.iter_mut().zip(r) {
            *b = b.union_hull(&Interval::point(v));
        }
        Ok(true)
    });
    match ok {
        Ok(()) => return Ok(exact),
        Err(MapError::Eval(e)) => {
            return Err(MapError::Other(format!(
                "a result has no 64-bit value at a point of the domain ({e}), so the image \
                 cannot be the inverse's domain"
            )))
        }
        Err(MapError::Interrupted) => return Err(MapError::Interrupted),
        Err(_) => {}
    }
    let bounds = m.bounds();
    let nd = m.dims.len();
    let mut out = Vec::with_capacity(m.results.len());
    for (k, &r) in m.results.iter().enumerate() {
        let Some((lo, hi)) = linear_box_range(r, &bounds[..nd]) else {
            out.push(m.range_of(r));
            continue;
        };
        let fits = |x: i128| i64::try_from(x).is_ok();
        if !fits(lo) || !fits(hi) {
            let past = if fits(hi) { lo } else { hi };
            let why = if m.constraints.is_empty() {
                "reaches"
            } else {
                "may reach (over the dimensions' bounds)"
            };
            return Err(MapError::Overflow(format!(
                "result {k} (`{}`): it {why} {past}, which does not fit in 64 bits, so no \
                 dimension of the inverse can hold its image",
                m.show_expr(r)
            )));
        }
        out.push(Interval::new(lo as i64, hi as i64));
    }
    Ok(out)
}

/// The exact range of `e` over the box `bounds` when `e` is linear in the variables of
/// the box, in 128 bits (a linear form takes its extremes at the box's corners).
fn linear_box_range(e: Expr, bounds: &[Interval]) -> Option<(i128, i128)> {
    let lin = Linear::of(e)?;
    let (mut lo, mut hi) = (i128::from(lin.constant), i128::from(lin.constant));
    for &(atom, k) in &lin.terms {
        let b = bounds.get(atom.as_var()? as usize)?;
        if b.is_empty() {
            return None;
        }
        let (x, y) = (
            i128::from(k) * i128::from(b.lo),
            i128::from(k) * i128::from(b.hi),
        );
        lo += x.min(y);
        hi += x.max(y);
    }
    Some((lo, hi))
}

/// Case 1: affine results. `None` when some result is not affine.
fn affine_inverse(m: &IndexingMap) -> Result<Option<IndexingMap>, MapError> {
    let nd = m.dims.len();
    let mut rows: Vec<Vec<i128>> = Vec::new();
    let mut consts: Vec<i128> = Vec::new();
    for &r in &m.results {
        let Some(lin) = Linear::of(r) else {
            return Ok(None);
        };
        let mut row = vec![0i128; nd];
        for &(atom, k) in &lin.terms {
            match atom.kind() {
                ExprKind::Var(v) if (v as usize) < nd => row[v as usize] = k as i128,
                _ => return Ok(None),
            }
        }
        rows.push(row);
        consts.push(lin.constant as i128);
    }
    // Pick a full-rank square subset of the results, greedily.
    let mut chosen: Vec<usize> = Vec::new();
    for i in 0..rows.len() {
        let mut trial: Vec<Vec<i128>> = chosen.iter().map(|&j| rows[j].clone()).collect();
        trial.push(rows[i].clone());
        if rank(&trial) == trial.len() {
            chosen.push(i);
        }
        if chosen.len() == nd {
            break;
        }
    }
    if chosen.len() < nd {
        // Rank-deficient: say which results repeat or depend on each other.
        for i in 0..rows.len() {
            for j in 0..i {
                if rows[i] == rows[j] && rows[i].iter().any(|&x| x != 0) {
                    return Err(not_bijective(format!(
                        "results {j} and {i} use the same combination of dimensions ({}), so the \
                         other dimensions are lost",
                        m.show_expr(m.results[i])
                    )));
                }
            }
        }
        if rows.len() < nd {
            // Fewer affine results than dimensions: may still be a linearization.
            return Ok(None);
        }
        return Err(not_bijective(format!(
            "the results are linearly dependent: only {} of the {} dimensions can be recovered",
            chosen.len(),
            nd
        )));
    }
    let a: Vec<Vec<i128>> = chosen.iter().map(|&j| rows[j].clone()).collect();
    let det = determinant(&a);
    let adj = adjugate(&a);
    let (det, sign) = if det < 0 { (-det, -1i128) } else { (det, 1) };
    let to_i64 = |x: i128| i64::try_from(x).map_err(|_| MapError::Overflow("inverse".into()));
    // New dims y_k, one per result of m; x = adj·(y_chosen - c) / det.
    let ny = m.results.len();
    let mut x_exprs: Vec<Expr> = Vec::new();
    let mut constraints: Vec<(Expr, Interval)> = Vec::new();
    for i in 0..nd {
        let mut num = Expr::constant(0);
        for (col, &j) in chosen.iter().enumerate() {
            let coef = to_i64(sign * adj[i][col])?;
            let term = Expr::var(j as u32)
                .add(Expr::constant(to_i64(-consts[j])?))
                .mul(Expr::constant(coef));
            num = num.add(term);
        }
        let mut num = crate::expr::canonical(num);
        // Divide out what the numerator and the determinant share: (2a) floordiv 14 is
        // a floordiv 7, and (2a) mod 14 = 0 exactly when a mod 7 = 0.
        let mut det_i = det;
        if let Some(lin) = Linear::of(num) {
            let g = lin
                .terms
                .iter()
                .fold(gcd(det, lin.constant as i128), |g, &(_, k)| {
                    gcd(g, (k as i128).abs())
                });
            let g = g.abs();
            if g > 1 && lin.divisible_by(to_i64(g)?) {
                num = lin.div_exact(to_i64(g)?).to_expr();
                det_i = det / g;
            }
        }
        if det_i == 1 {
            x_exprs.push(num);
        } else {
            let d = Expr::constant(to_i64(det_i)?);
            constraints.push((num.modulo(d), Interval::point(0)));
            x_exprs.push(num.floordiv(d));
        }
    }
    // Results not chosen: y_k must equal their value at x.
    for k in 0..ny {
        if chosen.contains(&k) {
            continue;
        }
        let at_x = m.results[k].substitute(&mut |v| x_exprs[v as usize]);
        constraints.push((at_x.sub(Expr::var(k as u32)), Interval::point(0)));
    }
    Ok(Some(assemble(m, x_exprs, constraints, None)?))
}

/// Builds the inverse map: new dims over the result ranges, results `x_exprs`, and the
/// original domain carried over as constraints on `x_exprs`.
fn assemble(
    m: &IndexingMap,
    x_exprs: Vec<Expr>,
    mut constraints: Vec<(Expr, Interval)>,
    bounds: Option<Vec<Interval>>,
) -> Result<IndexingMap, MapError> {
    let bounds = match bounds {
        Some(b) => b,
        None => result_bounds(m, &Limits::default())?,
    };
    let dims: Vec<Variable> = bounds
        .iter()
        .enumerate()
        .map(|(k, b)| Variable {
            name: format!("d{k}"),
            bounds: *b,
        })
        .collect();
    let ybounds: Vec<Interval> = bounds.clone();
    for (i, d) in m.dims.iter().enumerate() {
        let e = crate::expr::canonical(x_exprs[i]);
        let iv = crate::interval::range_of(e, &ybounds);
        if !d.bounds.contains_interval(&iv) {
            constraints.push((e, d.bounds));
        }
    }
    for &(e, iv) in &m.constraints {
        constraints.push((e.substitute(&mut |v| x_exprs[v as usize]), iv));
    }
    let mut out = IndexingMap::new(dims, vec![], vec![], x_exprs, constraints);
    // Constraints implied by the new bounds add nothing.
    let b = out.bounds();
    out.constraints
        .retain(|&(e, iv)| !iv.contains_interval(&crate::interval::range_of(e, &b)));
    Ok(out)
}

/// Case 2: linearize over the result box, delinearize over the dimension box.
fn reshape_candidate(m: &IndexingMap, limits: &Limits) -> Result<IndexingMap, MapError> {
    let rb = result_bounds(m, limits)?;
    for (d, b) in m.dims.iter().zip(&rb) {
        if d.bounds.is_full() || b.is_full() {
            return Err(MapError::Unbounded(d.name.clone()));
        }
    }
    // lin(y) = Σ (y_j - lo_j) * stride_j, row-major over the result box.
    let mut lin = Expr::constant(0);
    let mut stride: i64 = 1;
    for (j, b) in rb.iter().enumerate().rev() {
        // y_j - lo_j (`sub`: lo_j = -2^63 has no negation in 64 bits)
        let term = Expr::var(j as u32)
            .sub(Expr::constant(b.lo))
            .mul(Expr::constant(stride));
        lin = lin.add(term);
        stride = stride
            .checked_mul(
                b.size()
                    .and_then(|s| i64::try_from(s).ok())
                    .unwrap_or(i64::MAX),
            )
            .ok_or_else(|| MapError::Overflow("linearized index".into()))?;
    }
    let lin = crate::expr::canonical(lin);
    // x_i = lo_i + (lin floordiv inner_i) mod extent_i (no mod for the outermost).
    let nd = m.dims.len();
    let mut x_exprs = vec![Expr::constant(0); nd];
    let mut inner: i64 = 1;
    for i in (0..nd).rev() {
        let b = m.dims[i].bounds;
        let extent = b
            .size()
            .and_then(|s| i64::try_from(s).ok())
            .unwrap_or(i64::MAX);
        let mut e = lin.floordiv(Expr::constant(inner));
        if i > 0 {
            e = e.modulo(Expr::constant(extent));
        }
        x_exprs[i] = crate::expr::canonical(e.add(Expr::constant(b.lo)));
        inner = inner
            .checked_mul(extent)
            .ok_or_else(|| MapError::Overflow("delinearized index".into()))?;
    }
    assemble(m, x_exprs, vec![], Some(rb))
}

/// Checks a candidate inverse `inv` against `m` and completes its domain to exactly the
/// image of `m`, without storing the points:
///
/// 1. at every point `x` of `m`'s domain, `y = m(x)` lies in `inv`'s domain and
///    `inv(y) = x` (so `inv` is a left inverse and `m` is one-to-one);
/// 2. at every point `y` of `inv`'s domain, `m(inv(y)) = y`: each result `k` where that
///    fails somewhere becomes a constraint `m_k(inv(y)) - y_k in [0, 0]` (all of them, when
///    `inv`'s box is too large to walk). Then `inv`'s domain is exactly the image.
///
/// `exact`: the candidate is a left inverse by construction, so step 1 may be skipped when
/// the domain is too large to walk.
fn complete(
    m: &IndexingMap,
    inv: IndexingMap,
    limits: &Limits,
    exact: bool,
) -> Result<IndexingMap, MapError> {
    let cm = Compiled::new(m);
    let ci = Compiled::new(&inv);
    let (mut rm, mut ri) = (cm.registers(), ci.registers());
    let mut xo = vec![0i64; inv.results.len()];
    let mut bad: Option<(Vec<i64>, Vec<i64>)> = None;
    let walk = DomainPoints::for_each(m, limits, &mut |x, y| {
        let ok = ci.eval(&inv, y, &mut ri, &mut xo).map_err(MapError::Eval)?;
        if !ok || xo.as_slice() != x {
            bad = Some((x.to_vec(), y.to_vec()));
            return Ok(false);
        }
        Ok(true)
    });
    match walk {
        Ok(()) => {}
        Err(MapError::TooLarge { .. }) if exact => {}
        Err(e @ MapError::TooLarge { .. }) => {
            // Undecided, not a counterexample: the map may well be a bijection.
            return Err(MapError::Other(format!(
                "cannot decide whether the map is a bijection: no affine inverse was found, and \
                 the domain is too large to check another candidate point by point ({e})"
            )));
        }
        Err(e) => return Err(e),
    }
    if let Some((x, y)) = bad {
        // Explain: two points with one image, or a candidate that is simply wrong.
        if let Ok(Some(why)) = find_collision(m, limits) {
            return Err(not_bijective(why));
        }
        return Err(MapError::Other(format!(
            "no closed-form inverse found: {} comes from {}, which the candidate inverse does \
             not recover",
            fmt_point(&y),
            fmt_point(&x)
        )));
    }
    // Step 2: which results must be pinned for inv's domain to be exactly the image.
    let ny = m.results.len();
    let mut pin = vec![false; ny];
    let mut mo = vec![0i64; ny];
    let mut full_x = vec![0i64; m.num_vars()];
    let mut left_domain: Option<Vec<i64>> = None;
    let walk = DomainPoints::for_each(&inv, limits, &mut |y, x| {
        full_x[..x.len()].copy_from_slice(x);
        if !cm
            .eval(m, &full_x, &mut rm, &mut mo)
            .map_err(MapError::Eval)?
        {
            // The candidate's domain keeps x(y) in m's domain (`assemble`); if it does
            // not, the candidate is wrong, and pinning results would not fix it.
            left_domain = Some(y.to_vec());
            return Ok(false);
        }
        for k in 0..ny {
            pin[k] |= mo[k] != y[k];
        }
        Ok(!pin.iter().all(|&p| p))
    });
    match walk {
        Ok(()) => {}
        Err(MapError::TooLarge { .. }) => pin.iter_mut().for_each(|p| *p = true),
        Err(e) => return Err(e),
    }
    if let Some(y) = left_domain {
        return Err(MapError::Other(format!(
            "no closed-form inverse found: the candidate inverse sends {} outside the domain",
            fmt_point(&y)
        )));
    }
    if !pin.iter().any(|&p| p) {
        return Ok(inv);
    }
    let mut constraints = inv.constraints.clone();
    for (k, _) in pin.iter().enumerate().filter(|(_, &p)| p) {
        let at = m.results[k].substitute(&mut |v| inv.results[v as usize]);
        constraints.push((at.sub(Expr::var(k as u32)), Interval::point(0)));
    }
    let out = IndexingMap::new(
        inv.dims.clone(),
        vec![],
        vec![],
        inv.results.clone(),
        constraints,
    );
    Ok(out)
}

fn rank(rows: &[Vec<i128>]) -> usize {
    let mut a: Vec<Vec<i128>> = rows.to_vec();
    let (n, m) = (a.len(), a.first().map_or(0, |r| r.len()));
    let mut r = 0;
    for c in 0..m {
        let Some(p) = (r..n).find(|&i| a[i][c] != 0) else {
            continue;
        };
        a.swap(r, p);
        for i in 0..n {
            if i != r && a[i][c] != 0 {
                let (f, g) = (a[i][c], a[r][c]);
                for k in 0..m {
                    a[i][k] = a[i][k] * g - a[r][k] * f;
                }
                let gcd = a[i].iter().fold(0i128, |acc, &x| gcd(acc, x.abs()));
                if gcd > 1 {
                    for x in &mut a[i] {
                        *x /= gcd;
                    }
                }
            }
        }
        r += 1;
    }
    r
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Determinant by the Bareiss algorithm (exact in integers).
fn determinant(a: &[Vec<i128>]) -> i128 {
    let n = a.len();
    if n == 0 {
        return 1;
    }
    let mut m: Vec<Vec<i128>> = a.to_vec();
    let mut sign = 1i128;
    let mut prev = 1i128;
    for k in 0..n - 1 {
        if m[k][k] == 0 {
            match (k + 1..n).find(|&i| m[i][k] != 0) {
                Some(p) => {
                    m.swap(k, p);
                    sign = -sign;
                }
                None => return 0,
            }
        }
        for i in k + 1..n {
            for j in k + 1..n {
                m[i][j] = (m[i][j] * m[k][k] - m[i][k] * m[k][j]) / prev;
            }
        }
        prev = m[k][k];
    }
    sign * m[n - 1][n - 1]
}

/// The adjugate: `adj(A) · A = det(A) · I`.
fn adjugate(a: &[Vec<i128>]) -> Vec<Vec<i128>> {
    let n = a.len();
    if n == 1 {
        return vec![vec![1]];
    }
    let mut adj = vec![vec![0i128; n]; n];
    for i in 0..n {
        for j in 0..n {
            let minor: Vec<Vec<i128>> = (0..n)
                .filter(|&r| r != i)
                .map(|r| (0..n).filter(|&c| c != j).map(|c| a[r][c]).collect())
                .collect();
            let cof = determinant(&minor) * if (i + j) % 2 == 0 { 1 } else { -1 };
            adj[j][i] = cof;
        }
    }
    adj
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::equal::tests::relation;
    use crate::map::Status;
    use std::collections::{BTreeMap, BTreeSet};

    fn v(i: u32) -> Expr {
        Expr::var(i)
    }
    fn c(k: i64) -> Expr {
        Expr::constant(k)
    }

    /// One-to-one by brute force: one result per point, no result twice.
    fn one_to_one(m: &IndexingMap) -> bool {
        let rel = relation(m);
        let mut images = BTreeSet::new();
        rel.values()
            .all(|ys| ys.len() == 1 && images.insert(ys.clone()))
    }

    /// `inv` is the inverse of `m` exactly: the relation of `inv` is that of `m` reversed.
    fn check_inverse(m: &IndexingMap, inv: &IndexingMap) {
        let mut reversed: BTreeMap<Vec<i64>, BTreeSet<Vec<i64>>> = BTreeMap::new();
        for (x, ys) in relation(m) {
            for y in ys {
                reversed.entry(y).or_default().insert(x.clone());
            }
        }
        assert_eq!(relation(inv), reversed, "inverse {inv} of {m}");
    }

    fn map1(lo: i64, hi: i64, results: Vec<Expr>) -> IndexingMap {
        IndexingMap::new(
            vec![Variable::new("d0", lo, hi)],
            vec![],
            vec![],
            results,
            vec![],
        )
    }
    fn map2(b0: (i64, i64), b1: (i64, i64), results: Vec<Expr>) -> IndexingMap {
        IndexingMap::new(
            vec![
                Variable::new("d0", b0.0, b0.1),
                Variable::new("d1", b1.0, b1.1),
            ],
            vec![],
            vec![],
            results,
            vec![],
        )
    }

    /// The three maps issue 13 names, and the swapped orders, offsets and reshapes around
    /// them: every inverse found is exact by brute force, and `is_bijection` agrees with
    /// brute force on every map.
    #[test]
    fn inverses_are_exact_and_is_bijection_agrees_with_brute_force() {
        let lin = v(0).mul(c(6)).add(v(1));
        let mut maps = vec![
            map1(0, 3, vec![v(0).modulo(c(2)), v(0).floordiv(c(2))]),
            map1(0, 3, vec![v(0).floordiv(c(2)), v(0).modulo(c(2))]),
            map1(3, 10, vec![v(0).floordiv(c(2)), v(0).modulo(c(2))]),
            map1(3, 10, vec![v(0).modulo(c(2)), v(0).floordiv(c(2))]),
            map1(-5, 7, vec![v(0).modulo(c(3)), v(0).floordiv(c(3))]),
            map1(
                0,
                23,
                vec![
                    v(0).modulo(c(4)),
                    v(0).floordiv(c(4)).modulo(c(3)),
                    v(0).floordiv(c(12)),
                ],
            ),
            map1(0, 11, vec![v(0).modulo(c(4)), v(0).floordiv(c(3))]),
            map1(
                0,
                11,
                vec![v(0).modulo(c(4)), v(0).floordiv(c(4)).modulo(c(2))],
            ),
            map2(
                (0, 3),
                (0, 5),
                vec![
                    lin.floordiv(c(4)),
                    lin.floordiv(c(2)).modulo(c(2)),
                    v(1).modulo(c(2)),
                ],
            ),
            map2((0, 3), (0, 5), vec![lin.modulo(c(4)), lin.floordiv(c(4))]),
            map2((0, 3), (0, 5), vec![v(0).mul(c(3)).add(v(1))]),
            map2((0, 3), (0, 2), vec![v(0).mul(c(3)).add(v(1))]),
            map2((0, 3), (0, 4), vec![v(0).add(v(1)), v(0)]),
            map2(
                (0, 3),
                (0, 4),
                vec![v(1).modulo(c(2)), v(0), v(1).floordiv(c(2))],
            ),
        ];
        // (d0)[s0] -> (d0 + s0 * 0): the symbol changes nothing.
        maps.push(IndexingMap::new(
            vec![Variable::new("d0", 0, 3)],
            vec![Variable::new("s0", 0, 1)],
            vec![],
            vec![v(0).add(v(1).mul(c(0)))],
            vec![],
        ));
        // A constrained domain: a triangle.
        maps.push(IndexingMap::new(
            vec![Variable::new("d0", 0, 3), Variable::new("d1", 0, 3)],
            vec![],
            vec![],
            vec![v(0).mul(c(4)).add(v(1))],
            vec![(v(0).add(v(1)), Interval::new(0, 3))],
        ));
        let mut inverted = 0;
        let mut refused_one_to_one = 0;
        for m in &maps {
            let want = one_to_one(m);
            let got = is_bijection(m, &Limits::default()).expect("small");
            assert_eq!(got, want, "is_bijection {m}");
            match inverse(m, &Limits::default()) {
                Ok(inv) => {
                    assert!(want, "inverted a map that is not one-to-one: {m}");
                    assert_eq!(inv.status, Status::Defined);
                    check_inverse(m, &inv);
                    inverted += 1;
                }
                Err(MapError::NotBijective(why)) => {
                    assert!(!want, "refused a one-to-one map {m}: {why}");
                }
                Err(MapError::Other(why)) if why.starts_with("no closed-form") => {
                    // One-to-one maps with no closed form (d0 mod 4, d0 floordiv 3) may be
                    // refused, saying so and that they are bijections; nothing else.
                    assert!(want, "{m}: {why}");
                    assert!(why.contains("is a bijection"), "{m}: {why}");
                    refused_one_to_one += 1;
                }
                Err(e) => panic!("{m}: {e}"),
            }
        }
        assert!(inverted >= 12, "only {inverted} inverted");
        assert!(
            refused_one_to_one <= 1,
            "{refused_one_to_one} one-to-one maps refused"
        );
    }

    /// An empty domain is a bijection however its emptiness shows (KNOWN EMPTY, or found
    /// by enumeration, with or without symbols), and its inverse is the empty map back.
    #[test]
    fn an_empty_domain_is_a_bijection_with_the_empty_inverse() {
        let tight = |con: (Expr, Interval)| {
            IndexingMap::new(
                vec![Variable::new("d0", 0, 3)],
                vec![],
                vec![],
                vec![v(0), v(0).add(c(1))],
                vec![con],
            )
        };
        let mut maps = vec![
            tight((v(0), Interval::new(5, 8))),
            tight((v(0).mul(v(0)), Interval::new(5, 8))),
        ];
        maps.push(IndexingMap::new(
            vec![Variable::new("d0", 0, 3)],
            vec![Variable::new("s0", 0, 3)],
            vec![],
            vec![v(0).add(v(1))],
            vec![(v(0).mul(v(0)).add(v(1).mul(v(1))), Interval::new(19, 20))],
        ));
        assert!(maps[0].is_known_empty() && !maps[1].is_known_empty());
        for m in &maps {
            assert!(relation(m).is_empty(), "{m}");
            assert!(is_bijection(m, &Limits::default()).expect("small"), "{m}");
            let inv = inverse(m, &Limits::default()).expect("the empty inverse");
            assert_eq!(inv.status, Status::KnownEmpty, "{m}");
            assert_eq!(
                (inv.dims.len(), inv.results.len()),
                (m.results.len(), m.dims.len())
            );
        }
    }

    /// At the 64-bit limit the image is kept whole or the inverse is an error: `-d0` on
    /// `[-2^63, 0]` reaches 2^63, which no dimension holds (the inverse used to drop it,
    /// answering `[0, 2^63 - 1]`); on `[-2^63 + 1, 0]` the inverse is exact at both ends.
    #[test]
    fn an_image_past_64_bits_is_an_error_not_a_lost_point() {
        let lim = Limits::default();
        for (lo, r) in [(i64::MIN, v(0).neg()), (i64::MIN + 1, v(0).neg())] {
            let m = map1(lo, 0, vec![r]);
            let got = inverse(&m, &lim);
            if lo == i64::MIN {
                let Err(MapError::Overflow(why)) = got else {
                    panic!("{m}: {got:?}");
                };
                assert!(why.contains("9223372036854775808"), "{why}");
                assert!(matches!(is_bijection(&m, &lim), Err(MapError::Overflow(_))));
            } else {
                let inv = got.expect("fits");
                assert_eq!(inv.dims[0].bounds, Interval::new(0, i64::MAX), "{inv}");
                for x in [lo, lo + 1, -1, 0] {
                    let y = crate::expr::eval(m.results[0], &[x]).expect("fits");
                    assert_eq!(crate::expr::eval(inv.results[0], &[y]), Ok(x), "{inv}");
                }
            }
        }
        let m = map1(0, i64::MAX, vec![v(0).add(c(1))]);
        assert!(matches!(inverse(&m, &lim), Err(MapError::Overflow(_))));
        let m = map2(
            (0, 1 << 32),
            (0, (1 << 32) - 1),
            vec![v(0).mul(c(1 << 32)).add(v(1))],
        );
        assert!(matches!(inverse(&m, &lim), Err(MapError::Overflow(_))));
    }

    /// The answer of `inverse` against brute force: an inverse is exact, "not a bijection"
    /// only for maps that are not one-to-one, and "no closed-form inverse found" (never
    /// claiming the map is no bijection) only for maps that are. Returns whether inverted.
    fn inverse_agrees(m: &IndexingMap) -> bool {
        let want = one_to_one(m);
        assert_eq!(is_bijection(m, &Limits::default()), Ok(want), "{m}");
        match inverse(m, &Limits::default()) {
            Ok(inv) => {
                assert!(want, "inverted a map that is not one-to-one: {m}");
                check_inverse(m, &inv);
                true
            }
            Err(MapError::NotBijective(why)) => {
                assert!(!want, "called a one-to-one map no bijection: {m}: {why}");
                false
            }
            Err(MapError::Other(why)) => {
                assert!(want && why.starts_with("no closed-form"), "{m}: {why}");
                assert!(why.contains("is a bijection"), "{m}: {why}");
                false
            }
            Err(e) => panic!("{m}: {e}"),
        }
    }

    /// Dimensions and symbols with one value, by their bounds or by an equality
    /// constraint, are constants or functions of the other variables (the fuzzer's maps,
    /// which `inverse` called no bijection while `is_bijection` said true); and a bijection
    /// with no closed form (`(7·d0 + 3·d1) mod 64`) is refused as such.
    #[test]
    fn pinned_variables_are_inverted_and_no_closed_form_is_no_verdict() {
        let pt = |name: &str, lo: i64, hi: i64| Variable::new(name, lo, hi);
        let inverted = [
            map1(3, 3, vec![c(5)]),
            map2((0, 3), (5, 5), vec![v(0), v(0).add(c(1))]),
            IndexingMap::new(
                vec![pt("d0", 0, 3)],
                vec![pt("s0", 0, 3)],
                vec![],
                vec![v(0).add(v(1))],
                vec![(v(0).sub(v(1)), Interval::point(0))],
            ),
            IndexingMap::new(
                vec![pt("d0", 0, 3), pt("d1", 0, 9)],
                vec![],
                vec![],
                vec![v(0).mul(c(2)).add(v(1))],
                vec![(v(1).sub(v(0).mul(c(3))), Interval::point(1))],
            ),
            IndexingMap::new(
                vec![pt("d0", 0, 3), pt("d1", 0, 9)],
                vec![pt("s0", 2, 2)],
                vec![pt("r0", 0, 7)],
                vec![v(1).add(v(2)), v(3).mul(c(2))],
                vec![(v(3).sub(v(0)), Interval::point(1))],
            ),
        ];
        for m in &inverted {
            assert!(inverse_agrees(m), "not inverted: {m}");
        }
        let modular = map2(
            (0, 63),
            (0, 63),
            vec![v(0).mul(c(7)).add(v(1).mul(c(3))).modulo(c(64)), v(1)],
        );
        inverse_agrees(&modular);
        // Not one-to-one, with a pinned variable: still "not a bijection".
        let m = IndexingMap::new(
            vec![pt("d0", 0, 3), pt("d1", 0, 9)],
            vec![],
            vec![],
            vec![v(0).add(v(1))],
            vec![(v(0).add(v(1)), Interval::point(1))],
        );
        assert!(!inverse_agrees(&m));
        // Brute force over small maps: affine and floordiv/mod results, with an equality
        // constraint and a pinned symbol or dimension.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = |n: i64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) % n as u64) as i64
        };
        let mut count = 0;
        for _ in 0..400 {
            let hi1 = if rnd(4) == 0 { 2 } else { rnd(6) + 2 };
            let s_hi = rnd(3);
            let atoms = [v(0), v(1), v(2)];
            let term = |rnd: &mut dyn FnMut(i64) -> i64| {
                let a = atoms[rnd(3) as usize].mul(c(rnd(5) - 2));
                let b = atoms[rnd(3) as usize].mul(c(rnd(3) + 1));
                let e = a.add(b).add(c(rnd(3)));
                match rnd(4) {
                    0 => e.floordiv(c(rnd(3) + 2)),
                    1 => e.modulo(c(rnd(3) + 2)),
                    _ => e,
                }
            };
            let results = (0..rnd(2) + 1).map(|_| term(&mut rnd)).collect();
            let k = [1, -1, 2][rnd(3) as usize];
            let eq = atoms[rnd(3) as usize]
                .mul(c(k))
                .add(atoms[rnd(3) as usize].mul(c(rnd(3) - 1)));
            let m = IndexingMap::new(
                vec![pt("d0", 0, 3), pt("d1", 1, hi1)],
                vec![pt("s0", 0, s_hi)],
                vec![],
                results,
                vec![(eq, Interval::point(rnd(4)))],
            );
            if m.is_known_empty() || m.zero_divisor().is_some() {
                continue;
            }
            count += usize::from(inverse_agrees(&m));
        }
        assert!(count >= 20, "only {count} inverted");
    }

    /// Refusals name two points with one image, and they do collide.
    #[test]
    fn a_refusal_names_a_collision() {
        let m = map2((0, 3), (0, 5), vec![v(0).mul(c(3)).add(v(1))]);
        let Err(MapError::NotBijective(why)) = inverse(&m, &Limits::default()) else {
            panic!("not one-to-one");
        };
        assert_eq!(why, "not injective: (0, 3) and (1, 0) both map to (3)");
    }
}
