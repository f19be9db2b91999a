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

use super::{DomainPoints, IndexingMap, Limits, Variable};
use crate::expr::{Expr, ExprKind, Linear};
use crate::interval::Interval;
use crate::MapError;
use std::collections::HashMap;

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

/// Whether `m` is a bijection from its domain onto its image, with an inverse we can write.
pub fn is_bijection(m: &IndexingMap, limits: &Limits) -> Result<bool, MapError> {
    match inverse(m, limits) {
        Ok(_) => Ok(true),
        Err(MapError::NotBijective(_)) => Ok(false),
        Err(e) => Err(e),
    }
}

fn not_bijective(why: impl Into<String>) -> MapError {
    MapError::NotBijective(why.into())
}

fn fmt_point(p: &[i64]) -> String {
    format!("({})", p.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", "))
}

pub fn inverse(m: &IndexingMap, limits: &Limits) -> Result<IndexingMap, MapError> {
    match m.status {
        super::Status::Undefined => return Err(MapError::Undefined),
        super::Status::KnownEmpty => {
            return Err(not_bijective("the map is KNOWN EMPTY: there is nothing to invert"))
        }
        super::Status::Defined => {}
    }
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
        let fixed: Vec<i64> = m.ranges.iter().chain(&m.runtimes).map(|v| v.bounds.lo).collect();
        let sub = |e: Expr| e.substitute(&mut |v| {
            if (v as usize) < nd { Expr::var(v) } else { Expr::constant(fixed[v as usize - nd]) }
        });
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
    for (i, d) in m.dims.iter().enumerate() {
        if !m.results.iter().any(|r| r.uses_var(i as u32)) && !d.bounds.is_point() {
            return Err(not_bijective(format!(
                "dimension `{}` is dropped: no result uses it, so points that differ only in `{}` \
                 have the same image",
                d.name, d.name
            )));
        }
    }
    // A result repeated, e.g. (d0) -> (d0, d0) is fine (injective) but (d0, d1) -> (d0, d0)
    // drops d1 and was caught above.
    if let Some(inv) = affine_inverse(m)? {
        return Ok(inv);
    }
    let candidate = reshape_candidate(m, limits)?;
    verify(m, &candidate, limits)?;
    Ok(candidate)
}

/// Result bounds: exact by enumeration when small, else by intervals.
fn result_bounds(m: &IndexingMap, limits: &Limits) -> Vec<Interval> {
    let mut exact: Vec<Interval> = vec![Interval::new(1, 0); m.results.len()];
    let ok = DomainPoints::for_each(m, limits, &mut |_, r| {
        for (b, &v) in exact.iter_mut().zip(r) {
            *b = b.union_hull(&Interval::point(v));
        }
        Ok(true)
    });
    match ok {
        Ok(()) => exact,
        Err(_) => m.results.iter().map(|&r| m.range_of(r)).collect(),
    }
}

/// Case 1: affine results. `None` when some result is not affine.
fn affine_inverse(m: &IndexingMap) -> Result<Option<IndexingMap>, MapError> {
    let nd = m.dims.len();
    let mut rows: Vec<Vec<i128>> = Vec::new();
    let mut consts: Vec<i128> = Vec::new();
    for &r in &m.results {
        let Some(lin) = Linear::of(r) else { return Ok(None) };
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
            let term = Expr::var(j as u32).add(Expr::constant(to_i64(-consts[j])?)).mul(Expr::constant(coef));
            num = num.add(term);
        }
        let num = crate::expr::canonical(num);
        if det == 1 {
            x_exprs.push(num);
        } else {
            let d = Expr::constant(to_i64(det)?);
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
    Ok(Some(assemble(m, x_exprs, constraints, None)))
}

/// Builds the inverse map: new dims over the result ranges, results `x_exprs`, and the
/// original domain carried over as constraints on `x_exprs`.
fn assemble(
    m: &IndexingMap,
    x_exprs: Vec<Expr>,
    mut constraints: Vec<(Expr, Interval)>,
    bounds: Option<Vec<Interval>>,
) -> IndexingMap {
    let bounds = bounds.unwrap_or_else(|| result_bounds(m, &Limits::default()));
    let dims: Vec<Variable> = bounds
        .iter()
        .enumerate()
        .map(|(k, b)| Variable { name: format!("d{k}"), bounds: *b })
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
    out.constraints.retain(|&(e, iv)| !iv.contains_interval(&crate::interval::range_of(e, &b)));
    out
}

/// Case 2: linearize over the result box, delinearize over the dimension box.
fn reshape_candidate(m: &IndexingMap, limits: &Limits) -> Result<IndexingMap, MapError> {
    let rb = result_bounds(m, limits);
    for (d, b) in m.dims.iter().zip(&rb) {
        if d.bounds.is_full() || b.is_full() {
            return Err(MapError::Unbounded(d.name.clone()));
        }
    }
    // lin(y) = Σ (y_j - lo_j) * stride_j, row-major over the result box.
    let mut lin = Expr::constant(0);
    let mut stride: i64 = 1;
    for (j, b) in rb.iter().enumerate().rev() {
        let term = Expr::var(j as u32).add(Expr::constant(-b.lo)).mul(Expr::constant(stride));
        lin = lin.add(term);
        stride = stride
            .checked_mul(b.size().and_then(|s| i64::try_from(s).ok()).unwrap_or(i64::MAX))
            .ok_or_else(|| MapError::Overflow("linearized index".into()))?;
    }
    let lin = crate::expr::canonical(lin);
    // x_i = lo_i + (lin floordiv inner_i) mod extent_i (no mod for the outermost).
    let nd = m.dims.len();
    let mut x_exprs = vec![Expr::constant(0); nd];
    let mut inner: i64 = 1;
    for i in (0..nd).rev() {
        let b = m.dims[i].bounds;
        let extent = b.size().and_then(|s| i64::try_from(s).ok()).unwrap_or(i64::MAX);
        let mut e = lin.floordiv(Expr::constant(inner));
        if i > 0 {
            e = e.modulo(Expr::constant(extent));
        }
        x_exprs[i] = crate::expr::canonical(e.add(Expr::constant(b.lo)));
        inner = inner.checked_mul(extent).ok_or_else(|| MapError::Overflow("delinearized index".into()))?;
    }
    Ok(assemble(m, x_exprs, vec![], Some(rb)))
}

/// Checks `inv` against `m` point by point, and explains a failure.
fn verify(m: &IndexingMap, inv: &IndexingMap, limits: &Limits) -> Result<(), MapError> {
    let mut seen: HashMap<Vec<i64>, Vec<i64>> = HashMap::new();
    let mut bad: Option<String> = None;
    DomainPoints::for_each(m, limits, &mut |x, y| {
        if let Some(prev) = seen.insert(y.to_vec(), x.to_vec()) {
            bad = Some(format!(
                "not injective: {} and {} both map to {}",
                fmt_point(&prev),
                fmt_point(x),
                fmt_point(y)
            ));
            return Ok(false);
        }
        Ok(true)
    })
    .map_err(|e| match e {
        MapError::TooLarge { .. } => MapError::NotBijective(format!(
            "no affine inverse, and the domain is too large to check a reshape-style inverse \
             point by point ({e})"
        )),
        e => e,
    })?;
    if let Some(why) = bad {
        return Err(not_bijective(why));
    }
    let mut unreached: Option<Vec<i64>> = None;
    let mut wrong: Option<(Vec<i64>, Vec<i64>)> = None;
    DomainPoints::for_each(inv, limits, &mut |y, x| {
        match seen.get(y) {
            None => {
                unreached = Some(y.to_vec());
                return Ok(false);
            }
            Some(orig) if orig.as_slice() != x => {
                wrong = Some((y.to_vec(), orig.clone()));
                return Ok(false);
            }
            _ => {}
        }
        Ok(true)
    })?;
    if let Some(y) = unreached {
        return Err(not_bijective(format!(
            "not onto a box: {} lies between the results' bounds but no point maps to it",
            fmt_point(&y)
        )));
    }
    if let Some((y, x)) = wrong {
        return Err(not_bijective(format!(
            "no closed-form inverse found: {} comes from {}, which linearize/delinearize does \
             not recover",
            fmt_point(&y),
            fmt_point(&x)
        )));
    }
    let n_inv = DomainPoints::count(inv, limits)?;
    if n_inv as usize != seen.len() {
        return Err(not_bijective("not onto a box of results"));
    }
    Ok(())
}

fn rank(rows: &[Vec<i128>]) -> usize {
    let mut a: Vec<Vec<i128>> = rows.to_vec();
    let (n, m) = (a.len(), a.first().map_or(0, |r| r.len()));
    let mut r = 0;
    for c in 0..m {
        let Some(p) = (r..n).find(|&i| a[i][c] != 0) else { continue };
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
