//! Deriving the tile of an operand from the tile of the output, through one indexing map.
//!
//! The output is cut into tiles of `sizes`; tile `t` holds `d_i = t_i * size_i + e_i`,
//! `e_i in [0, size_i - 1]`. Substituting that into the map and normalising
//! (`normalize.rs`) must leave every operand coordinate in the form
//! `offset(t, runtime) + stride * k` with one element variable `k` per coordinate; the tile of
//! the operand is then `(offset, size = extent of k, stride)`, cut to a `clip` interval where
//! the map's domain cuts a partial tile. Along the way:
//!
//! - a `floordiv`/`mod` that splits a tile dimension evenly splits its element variable
//!   (`e = 8 * e_hi + e_lo`): a reshape of whole rows;
//! - a constraint on one element variable that keeps an evenly spaced subset re-parametrises it
//!   (`(d0 - 1) mod 2 in [0, 0]`: interior padding keeps every other element);
//! - two element variables in one coordinate merge when they leave no gap
//!   (`e0 * 8 + e1` with `e1 in [0, 7]`: a collapse of whole rows).
//!
//! Anything else is "not representable as a tile", with the reason.

use super::normalize::{normalize, Role, Space};
use super::{NotATile, OperandTile};
use crate::expr::{canonical, Expr, ExprKind, Linear, Op};
use crate::interval::Interval;
use crate::map::{IndexingMap, Status, Variable};

struct Work {
    bounds: Vec<Interval>,
    roles: Vec<Role>,
    /// For element variables: the output dimension or range variable it comes from.
    origin: Vec<String>,
    results: Vec<Expr>,
    /// Constraint, interval, and how to name it in a message.
    constraints: Vec<(Expr, Interval, String)>,
}

impl Work {
    fn space(&self) -> Space<'_> {
        Space {
            bounds: &self.bounds,
            roles: &self.roles,
        }
    }
    fn elem_vars(&self, e: Expr) -> Vec<u32> {
        let mut vs = Vec::new();
        e.visit_vars(&mut |v| {
            if self.roles[v as usize] == Role::Elem && !vs.contains(&v) {
                vs.push(v);
            }
        });
        vs
    }
    /// Whether `v` appears in a result other than `j` or in a constraint.
    fn used_elsewhere(&self, j: usize, v: u32) -> bool {
        self.results
            .iter()
            .enumerate()
            .any(|(i, r)| i != j && r.uses_var(v))
            || self.constraints.iter().any(|c| c.0.uses_var(v))
    }

    fn ext(&self, v: u32) -> i64 {
        let b = self.bounds[v as usize];
        b.hi - b.lo + 1
    }
    fn new_elem(&mut self, origin: String, extent: i64) -> u32 {
        self.bounds.push(Interval::new(0, extent - 1));
        self.roles.push(Role::Elem);
        self.origin.push(origin);
        (self.bounds.len() - 1) as u32
    }
    fn substitute(&mut self, v: u32, by: Expr) {
        let mut f = |w: u32| if w == v { by } else { Expr::var(w) };
        for r in &mut self.results {
            *r = canonical(r.substitute(&mut f));
        }
        for c in &mut self.constraints {
            c.0 = canonical(c.0.substitute(&mut f));
        }
    }
    fn normalize_all(&mut self) {
        let mut results = std::mem::take(&mut self.results);
        for r in &mut results {
            *r = normalize(*r, &self.space());
        }
        self.results = results;
        let mut cs = std::mem::take(&mut self.constraints);
        for c in &mut cs {
            c.0 = normalize(c.0, &self.space());
        }
        self.constraints = cs;
    }
}

/// The tile of the operand that `map` reads, for output tiles of `sizes`.
pub fn derive(map: &IndexingMap, sizes: &[i64]) -> Result<OperandTile, NotATile> {
    match map.status {
        Status::Undefined => return Err(NotATile::new("the map is UNDEFINED")),
        Status::KnownEmpty => {
            return Err(NotATile::new(
                "the map is KNOWN EMPTY: no tile reads this operand",
            ))
        }
        Status::Defined => {}
    }
    let n = map.dims.len();
    if sizes.len() != n {
        return Err(NotATile::new(format!(
            "the map has {n} dimension{} but {} tile size{} given",
            if n == 1 { "" } else { "s" },
            sizes.len(),
            if sizes.len() == 1 { " is" } else { "s are" }
        )));
    }
    let names = map.names();
    let nr = map.runtimes.len();
    let ns = map.ranges.len();
    let mut w = Work {
        bounds: vec![],
        roles: vec![],
        origin: vec![],
        results: vec![],
        constraints: vec![],
    };
    // t_i
    for (i, d) in map.dims.iter().enumerate() {
        let z = sizes[i];
        if z < 1 {
            return Err(NotATile::new(format!(
                "tile size {z} for {} is not positive",
                d.name
            )));
        }
        if d.bounds.is_full() {
            return Err(NotATile::new(format!(
                "{} has no bounds, so it cannot be cut into tiles",
                d.name
            )));
        }
        let lo = crate::expr::arith::floor_div(d.bounds.lo, z);
        let hi = crate::expr::arith::floor_div(d.bounds.hi, z);
        w.bounds.push(Interval::new(lo, hi));
        w.roles.push(Role::Tile);
        w.origin.push(format!("t{i}"));
    }
    // runtime variables
    for r in &map.runtimes {
        w.bounds.push(r.bounds);
        w.roles.push(Role::Runtime);
        w.origin.push(r.name.clone());
    }
    // e_i, then range variables shifted to start at 0
    let mut subst: Vec<Expr> = Vec::with_capacity(map.num_vars());
    for (i, d) in map.dims.iter().enumerate() {
        let z = sizes[i];
        let e = w.new_elem(d.name.clone(), z);
        let Some(_) = w.bounds[i].hi.checked_add(1).and_then(|h| h.checked_mul(z)) else {
            return Err(NotATile::new(format!(
                "tile offsets along {} overflow",
                d.name
            )));
        };
        // One tile along this dimension: its index is a constant.
        let t = match w.bounds[i].is_point() {
            true => Expr::constant(w.bounds[i].lo),
            false => Expr::var(i as u32),
        };
        subst.push(t.mul(Expr::constant(z)).add(Expr::var(e)));
    }
    for s in &map.ranges {
        if s.bounds.is_full() {
            return Err(NotATile::new(format!(
                "range variable {} has no bounds",
                s.name
            )));
        }
        let Some(ext) = s
            .bounds
            .hi
            .checked_sub(s.bounds.lo)
            .and_then(|x| x.checked_add(1))
        else {
            return Err(NotATile::new(format!(
                "range variable {} is too large",
                s.name
            )));
        };
        let e = w.new_elem(s.name.clone(), ext);
        subst.push(Expr::var(e).add(Expr::constant(s.bounds.lo)));
    }
    for j in 0..nr {
        subst.push(Expr::var((n + j) as u32));
    }
    let _ = ns;
    let mut f = |v: u32| subst[v as usize];
    w.results = map
        .results
        .iter()
        .map(|r| canonical(r.substitute(&mut f)))
        .collect();
    for (i, d) in map.dims.iter().enumerate() {
        w.constraints
            .push((subst[i], d.bounds, format!("{} in {}", d.name, d.bounds)));
    }
    for &(c, iv) in &map.constraints {
        let text = format!("{} in {}", crate::expr::display(c, &names), iv);
        w.constraints
            .push((canonical(c.substitute(&mut f)), iv, text));
    }
    let result_text: Vec<String> = map
        .results
        .iter()
        .map(|&r| crate::expr::display(r, &names).to_string())
        .collect();

    for _round in 0..200 {
        w.normalize_all();
        // Constraints that always hold go; one that never holds empties the tile.
        let mut kept = Vec::new();
        for (c, iv, text) in std::mem::take(&mut w.constraints) {
            let r = crate::interval::range_of(c, &w.bounds);
            if iv.contains_interval(&r) {
                continue;
            }
            if r.intersect(&iv).is_empty() {
                return Err(NotATile::new(format!(
                    "`{text}` never holds: no tile reads this operand"
                )));
            }
            kept.push((c, iv, text));
        }
        w.constraints = kept;
        // An element variable with one value is a constant.
        let mut fixed = None;
        for e in w.results.iter().chain(w.constraints.iter().map(|c| &c.0)) {
            for v in w.elem_vars(*e) {
                if w.bounds[v as usize].is_point() {
                    fixed = Some(v);
                }
            }
        }
        if let Some(v) = fixed {
            w.substitute(v, Expr::constant(w.bounds[v as usize].lo));
            continue;
        }
        if restrict_single_var(&mut w)? {
            continue;
        }
        match find_split(&w, &result_text)? {
            Some((v, m)) => {
                let ext = w.ext(v);
                let origin = w.origin[v as usize].clone();
                let hi = w.new_elem(origin.clone(), ext / m);
                let lo = w.new_elem(origin, m);
                w.substitute(v, Expr::var(hi).mul(Expr::constant(m)).add(Expr::var(lo)));
            }
            None => return finish(w, map, &result_text),
        }
    }
    Err(NotATile::new(
        "the derivation did not settle (too many splits)",
    ))
}

/// A constraint on a single element variable that keeps an evenly spaced subset of it
/// re-parametrises that variable; returns whether anything changed.
fn restrict_single_var(w: &mut Work) -> Result<bool, NotATile> {
    for idx in 0..w.constraints.len() {
        let (c, iv, ref text) = w.constraints[idx];
        let mut vars = Vec::new();
        c.visit_vars(&mut |v| {
            if !vars.contains(&v) {
                vars.push(v)
            }
        });
        if vars.len() != 1 || w.roles[vars[0] as usize] != Role::Elem {
            continue;
        }
        let v = vars[0];
        let b = w.bounds[v as usize];
        if w.ext(v) > 1 << 20 {
            continue;
        }
        let mut point = vec![0i64; w.bounds.len()];
        let mut keep = Vec::new();
        for x in b.lo..=b.hi {
            point[v as usize] = x;
            if crate::expr::eval(c, &point).is_ok_and(|y| iv.contains(y)) {
                keep.push(x);
            }
        }
        let text = text.clone();
        if keep.is_empty() {
            return Err(NotATile::new(format!(
                "`{text}` never holds: no tile reads this operand"
            )));
        }
        let step = if keep.len() > 1 { keep[1] - keep[0] } else { 1 };
        if keep.windows(2).any(|p| p[1] - p[0] != step) {
            return Err(NotATile::new(format!(
                "`{text}` keeps elements along {} that are not evenly spaced",
                w.origin[v as usize]
            )));
        }
        w.constraints.remove(idx);
        let by = if keep.len() == 1 {
            Expr::constant(keep[0])
        } else {
            let nv = w.new_elem(w.origin[v as usize].clone(), keep.len() as i64);
            Expr::var(nv)
                .mul(Expr::constant(step))
                .add(Expr::constant(keep[0]))
        };
        w.substitute(v, by);
        return Ok(true);
    }
    Ok(false)
}

/// Every `floordiv`/`mod` by a constant whose numerator moves with the tile's elements.
fn div_atoms(e: Expr, w: &Work, out: &mut Vec<(Op, Expr, i64)>) {
    if let ExprKind::Bin(op, a, b) = e.kind() {
        if let (true, Some(c)) = (op.is_div_like(), b.as_const()) {
            if !w.elem_vars(a).is_empty() {
                out.push((op, a, c));
            }
        }
        div_atoms(a, w, out);
        div_atoms(b, w, out);
    }
}

/// An element variable to split so that a remaining `floordiv`/`mod` resolves, or the reason
/// none exists.
fn find_split(w: &Work, result_text: &[String]) -> Result<Option<(u32, i64)>, NotATile> {
    let items = w
        .results
        .iter()
        .enumerate()
        .map(|(j, &r)| (r, format!("operand dimension {j} `{}`", result_text[j])))
        .chain(
            w.constraints
                .iter()
                .map(|(c, _, t)| (*c, format!("constraint `{t}`"))),
        );
    for (e, what) in items {
        let mut atoms = Vec::new();
        div_atoms(e, w, &mut atoms);
        // The first remaining division decides: a split that resolves it, or why none
        // does (every division must resolve, so one that cannot ends the search; the
        // others are met again once this one is split).
        if let Some((op, num, c)) = atoms.into_iter().next() {
            let Some(l) = Linear::of(num) else {
                return Err(NotATile::new(format!("{what} is too large to analyse")));
            };
            let mut uneven = None;
            for &(atom, a) in &l.terms {
                let Some(v) = atom.as_var() else {
                    if !w.elem_vars(atom).is_empty() {
                        return Err(NotATile::new(format!(
                            "{what}: nested division of the tile's elements"
                        )));
                    }
                    continue;
                };
                if w.roles[v as usize] != Role::Elem {
                    continue;
                }
                let a = a.abs();
                if a == 0 || c % a != 0 {
                    uneven.get_or_insert((v, a, 0));
                    continue;
                }
                let m = c / a;
                let ext = w.ext(v);
                if m > 1 && ext > m {
                    if ext % m == 0 {
                        return Ok(Some((v, m)));
                    }
                    uneven = Some((v, a, m));
                }
            }
            let opname = op.symbol();
            let reason = match uneven {
                Some((v, _, m)) if m > 0 => format!(
                    "{what}: `{opname} {c}` splits the {} tile elements along {} unevenly ({} is neither a multiple nor a divisor of {m})",
                    w.ext(v),
                    w.origin[v as usize],
                    w.ext(v),
                ),
                Some((v, a, _)) => format!(
                    "{what}: steps of {a} along {} do not divide `{opname} {c}`",
                    w.origin[v as usize]
                ),
                None => {
                    let along: Vec<String> = w.elem_vars(num).iter().map(|&v| w.origin[v as usize].clone()).collect();
                    format!(
                        "{what}: tiles along {} start at offsets not aligned to `{opname} {c}`, so they straddle a boundary",
                        along.join(", ")
                    )
                }
            };
            return Err(NotATile::new(reason));
        }
    }
    Ok(None)
}

/// `e` as `off + g·v` with `g = ±1` and `off` free of `v`: (off, g).
fn split_linear_terms(e: Expr, v: u32) -> Option<(Expr, i64)> {
    let l = Linear::of(e)?;
    let g = l.terms.iter().find(|t| t.0 == Expr::var(v))?.1;
    if g.abs() != 1 {
        return None;
    }
    let off = Linear {
        terms: l
            .terms
            .iter()
            .copied()
            .filter(|t| t.0 != Expr::var(v))
            .collect(),
        constant: l.constant,
    }
    .to_expr();
    (!off.uses_var(v)).then_some((off, g))
}

/// How the element variables summed in one coordinate lay out their values, in units of
/// the smallest step: terms `(step, extent, var)` sorted by step (all positive), level 0
/// the smallest. Level `i` moves by `ratio[i]` (`ratio[0] = 1`) over `extent_i` values;
/// `span[i]` is how far levels `0..=i` reach (`span[0] = extent_0`,
/// `span[i] = (extent_i - 1) * ratio[i] + span[i - 1]`).
///
/// Level `i` *overlaps* what lies below when `ratio[i] < span[i - 1]` and leaves a *gap*
/// when `ratio[i] > span[i - 1]`. The values form a regular pattern when no level overlaps
/// above the first gap: below it every level fills or overlaps (a run, `d0 * 100 + s0`
/// with `s0` in [0, 127] over two rows is [0, 227]); from it up, each level's values are
/// its lower part (a remainder) plus a multiple of its ratio, so membership is a
/// condition per gap level on the remainders (`d0 * 128 + s0` with `s0` in [0, 63]:
/// `v mod 128 in [0, 63]`). `None`: a step that is no multiple of the smallest, or an
/// overlap above a gap (an irregular set).
struct Levels {
    step: i64,
    ratio: Vec<i64>,
    span: Vec<i64>,
}

impl Levels {
    fn of(terms: &[(i64, i64, u32)]) -> Option<Levels> {
        let step = terms.first()?.0;
        if step <= 0 {
            return None;
        }
        let mut ratio = vec![1];
        let mut span = vec![terms[0].1];
        let mut gap = false;
        for &(a, ext, _) in &terms[1..] {
            if a % step != 0 {
                return None;
            }
            let r = a / step;
            let below = *span.last()?;
            if r < below && gap {
                return None;
            }
            gap |= r > below;
            span.push((ext - 1).checked_mul(r)?.checked_add(below)?);
            ratio.push(r);
        }
        Some(Levels { step, ratio, span })
    }

    /// The conditions on the merged variable `x` (in units of `step`, in
    /// `[0, span - 1]`) that keep exactly the values the sum takes: for each level `i` with
    /// a gap, `((x mod ratio[m]) .. mod ratio[i]) in [0, span[i - 1] - 1]`.
    fn masks(&self, x: Expr) -> Vec<(Expr, Interval)> {
        let m = self.ratio.len();
        let mut out = Vec::new();
        let mut rest = x;
        for i in (1..m).rev() {
            rest = rest.modulo(Expr::constant(self.ratio[i]));
            if self.ratio[i] > self.span[i - 1] {
                out.push((rest, Interval::new(0, self.span[i - 1] - 1)));
            }
        }
        out
    }
}

/// The variable of coordinate `j`'s sum `el` that a partial tile cuts, when the cut can
/// move onto the merged variable, and how far the levels below it reach: every step
/// positive; the variable with the largest step `a_v` is the only one used outside this
/// coordinate, only in constraints that read no other element variable, with coefficient
/// ±1; the steps form a regular pattern ([`Levels`]: filled, overlapping or with gaps),
/// so a range of v is one range of the merged variable.
fn partial_outer(w: &Work, j: usize, el: &[(u32, i64)]) -> Option<(u32, i64)> {
    if el.iter().any(|&(_, a)| a <= 0) {
        return None;
    }
    let mut terms: Vec<(i64, i64, u32)> = el.iter().map(|&(v, a)| (a, w.ext(v), v)).collect();
    terms.sort();
    // The cut variable: the only one used outside, of the largest step (ties with the
    // others' steps included: `d0 + s0`), last.
    let used: Vec<usize> = (0..terms.len())
        .filter(|&i| w.used_elsewhere(j, terms[i].2))
        .collect();
    if terms.len() < 2 || used.len() != 1 {
        return None;
    }
    let top = terms.remove(used[0]);
    if terms.iter().any(|t| t.0 > top.0) {
        return None;
    }
    terms.push(top);
    let v = top.2;
    if w.results
        .iter()
        .enumerate()
        .any(|(i, r)| i != j && r.uses_var(v))
    {
        return None;
    }
    let cuts: Vec<&(Expr, Interval, String)> =
        w.constraints.iter().filter(|c| c.0.uses_var(v)).collect();
    if cuts.is_empty() {
        return None;
    }
    for c in &cuts {
        let (off, _) = split_linear_terms(c.0, v)?;
        if !w.elem_vars(off).is_empty() {
            return None;
        }
    }
    // A regular pattern ([`Levels`]): then v in [L, H] is the merged variable in
    // [L · ratio, H · ratio + below - 1], `below` what the levels under v reach (the
    // step of v when they fill it exactly; more where they overlap it, less where they
    // leave a gap, which the pattern's masks keep).
    let levels = Levels::of(&terms)?;
    let below = levels.span[levels.span.len() - 2];
    Some((v, below))
}

fn split_linear(w: &Work, e: Expr) -> Option<(Vec<(Expr, i64)>, i64, Vec<(u32, i64)>)> {
    let l = Linear::of(e)?;
    let mut off = Vec::new();
    let mut el = Vec::new();
    for &(atom, k) in &l.terms {
        if w.elem_vars(atom).is_empty() {
            off.push((atom, k));
        } else {
            el.push((atom.as_var()?, k));
        }
    }
    Some((off, l.constant, el))
}

fn finish(mut w: Work, map: &IndexingMap, result_text: &[String]) -> Result<OperandTile, NotATile> {
    let m = w.results.len();
    // Merge several element variables in one coordinate into one, a run of the
    // coordinate's values; where the sum leaves regular gaps, masks keep the values it
    // takes.
    let mut gap_masks: Vec<(Expr, Interval)> = Vec::new();
    for j in 0..m {
        let Some((off, k, el)) = split_linear(&w, w.results[j]) else {
            return Err(NotATile::new(format!(
                "operand dimension {j} `{}` is not affine in the tile's elements",
                result_text[j]
            )));
        };
        if el.len() <= 1 {
            continue;
        }
        // A partial tile along the outermost variable of a contiguous sum (`d * 128 + s`,
        // the tile cutting d's extent): its cut becomes a cut on the merged variable.
        let mut cut: Option<(u32, i64)> = None;
        if let Some(vb) = partial_outer(&w, j, &el) {
            cut = Some(vb);
        } else if let Some(&(v, _)) = el.iter().find(|&&(v, _)| w.used_elsewhere(j, v)) {
            if let Some(c) = w.constraints.iter().find(|c| c.0.uses_var(v)) {
                return Err(NotATile::new(format!(
                    "operand dimension {j} `{}` sums tile elements along several variables, and `{}` cuts a partial tile along {}; choose sizes that divide the extents",
                    result_text[j], c.2, w.origin[v as usize]
                )));
            }
            return Err(NotATile::new(format!(
                "operand dimension {j} `{}` combines tile elements along {} with others that also move other coordinates",
                result_text[j], w.origin[v as usize]
            )));
        }
        let lo_of = |v: u32| w.bounds[v as usize].lo;
        let cut = cut.map(|(v, below)| {
            (
                v,
                lo_of(v),
                el.iter().find(|e| e.0 == v).map_or(1, |e| e.1),
                below,
            )
        });
        // Flip negative steps: a*v = -a*(ext-1-v') + a*(ext-1).
        let mut constant = k;
        let mut terms: Vec<(i64, i64, u32)> = Vec::new(); // (step, extent, var)
        for &(v, a) in &el {
            let ext = w.ext(v);
            let lo = w.bounds[v as usize].lo;
            let base = a
                .checked_mul(lo)
                .ok_or_else(|| NotATile::new("offset overflow"))?;
            constant = constant
                .checked_add(base)
                .ok_or_else(|| NotATile::new("offset overflow"))?;
            if a < 0 {
                let shift = a
                    .checked_mul(ext - 1)
                    .ok_or_else(|| NotATile::new("offset overflow"))?;
                constant = constant
                    .checked_add(shift)
                    .ok_or_else(|| NotATile::new("offset overflow"))?;
                terms.push((-a, ext, v));
            } else {
                terms.push((a, ext, v));
            }
        }
        terms.sort();
        // The values the sum takes: a run, or a run with regular gaps (kept by masks).
        let Some(levels) = Levels::of(&terms) else {
            let step = terms[0].0;
            let (a, _, v) = *terms
                .iter()
                .find(|t| t.0 % step != 0)
                .unwrap_or(terms.last().expect("two terms or more"));
            return Err(NotATile::new(format!(
                "operand dimension {j} `{}` takes every {a}th element along {} with steps that leave no regular pattern (a step that is no multiple of the smallest, or levels overlapping above a gap)",
                result_text[j], w.origin[v as usize]
            )));
        };
        let (step, span) = (levels.step, *levels.span.last().expect("a level"));
        let origins: Vec<String> = terms
            .iter()
            .map(|t| w.origin[t.2 as usize].clone())
            .collect();
        let mut origins_dedup = origins.clone();
        origins_dedup.dedup();
        let nv = w.new_elem(origins_dedup.join("*"), span);
        gap_masks.extend(levels.masks(Expr::var(nv)));
        if let Some((v, lo_v, a_v, below)) = cut {
            // v in [L, H] is nv in [L · inner, H · inner + below - 1] (inner = a_v / step,
            // `below` what the variables under v reach: inner when they fill it, more
            // where they overlap, less where the masks keep the gaps), so
            // `off_c + g·v in [lo, hi]` (g = ±1) is `inner·g·off_c + nv in` that range:
            // same elements, one variable.
            let inner = a_v / step;
            let hi_v = w.bounds[v as usize].hi;
            let mut nonempty = Vec::new();
            for c in w.constraints.iter_mut().filter(|c| c.0.uses_var(v)) {
                let (off_c, g) = match split_linear_terms(c.0, v) {
                    Some(x) => x,
                    None => return Err(NotATile::new("a partial tile's cut is not linear")),
                };
                // g·v in [lo - off_c, hi - off_c]; as v: [L, H] shifted by off_c·(-g)
                let (lo, hi, sign) = if g == 1 {
                    (c.1.lo, c.1.hi, 1)
                } else {
                    let neg = |x: i64| {
                        x.checked_neg()
                            .ok_or_else(|| NotATile::new("offset overflow"))
                    };
                    (neg(c.1.hi)?, neg(c.1.lo)?, -1)
                };
                // v in [lo - sign·off_c, hi - sign·off_c]
                let ov = || NotATile::new("offset overflow");
                let new_lo = lo
                    .checked_sub(lo_v)
                    .and_then(|x| x.checked_mul(inner))
                    .ok_or_else(ov)?;
                let new_hi = hi
                    .checked_sub(lo_v)
                    .and_then(|x| x.checked_mul(inner))
                    .and_then(|x| x.checked_add(below - 1))
                    .ok_or_else(ov)?;
                let e = canonical(
                    off_c
                        .mul(Expr::constant(inner.checked_mul(sign).ok_or_else(ov)?))
                        .add(Expr::var(nv)),
                );
                // Where the parts below overlap v's step, an empty range of v would still
                // leave `below - inner` values of nv: the cut keeps some v only where
                // `sign·off_c in [lo - hi_v, hi - lo_v]` (a condition on the tile index).
                if below > inner {
                    let some = lo
                        .checked_sub(hi_v)
                        .zip(hi.checked_sub(lo_v))
                        .ok_or_else(ov)?;
                    let (o, some) = (
                        canonical(off_c.mul(Expr::constant(sign))),
                        Interval::new(some.0, some.1),
                    );
                    // Only where the tile indices can break it.
                    if !some.contains_interval(&crate::interval::range_of(o, &w.bounds)) {
                        nonempty.push((o, some, c.2.clone()));
                    }
                }
                *c = (e, Interval::new(new_lo, new_hi), c.2.clone());
            }
            w.constraints.extend(nonempty);
        }
        w.results[j] = canonical(
            Linear {
                terms: off,
                constant,
            }
            .to_expr()
            .add(Expr::var(nv).mul(Expr::constant(step))),
        );
    }
    // One element variable per coordinate, each in one coordinate.
    let mut coord: Vec<(Expr, Option<(u32, i64)>)> = Vec::with_capacity(m);
    for j in 0..m {
        let (off, k, el) = split_linear(&w, w.results[j]).expect("analysed above");
        let mut off_e = Linear {
            terms: off,
            constant: k,
        }
        .to_expr();
        let var = match el.as_slice() {
            [] => None,
            [(v, a)] => {
                let lo = w.bounds[*v as usize].lo;
                if lo != 0 {
                    off_e = canonical(off_e.add(Expr::constant(a.saturating_mul(lo))));
                }
                Some((*v, *a))
            }
            _ => unreachable!("several element variables were merged above"),
        };
        if let Some((v, _)) = var {
            if let Some(i) = (0..j).find(|&i| coord[i].1.is_some_and(|(u, _)| u == v)) {
                return Err(NotATile::new(format!(
                    "operand dimensions {i} `{}` and {j} `{}` both move with {}: the elements lie on a diagonal, which is not a tile",
                    result_text[i], result_text[j], w.origin[v as usize]
                )));
            }
        }
        coord.push((off_e, var));
    }
    // Constraints left: clips of one coordinate, or conditions on the tile index alone.
    let mut clips: Vec<Interval> = vec![Interval::FULL; m];
    let mut exists: Vec<(Expr, Interval)> = Vec::new();
    let mut masks: Vec<(Expr, Interval)> = Vec::new();
    for (c, iv, text) in std::mem::take(&mut w.constraints) {
        let Some((off, k, el)) = split_linear(&w, c) else {
            return Err(NotATile::new(format!(
                "`{text}` is not affine in the tile's elements"
            )));
        };
        if el.is_empty() {
            exists.push((c, iv));
            continue;
        }
        let in_results: Vec<(u32, i64)> = el
            .iter()
            .copied()
            .filter(|&(v, _)| coord.iter().any(|x| x.1.is_some_and(|(u, _)| u == v)))
            .collect();
        if in_results.is_empty() && el.len() == 1 && el[0].1.abs() == 1 {
            // Only asks that some element of the tile exists: offset + [lo, hi] meets iv.
            let (v, g) = el[0];
            let b = w.bounds[v as usize];
            let (vmin, vmax) = if g > 0 { (b.lo, b.hi) } else { (-b.hi, -b.lo) };
            let p = Linear {
                terms: off,
                constant: k,
            }
            .to_expr();
            let need = Interval::new(iv.lo.saturating_sub(vmax), iv.hi.saturating_sub(vmin));
            let pr = crate::interval::range_of(p, &w.bounds);
            if !need.contains_interval(&pr) {
                exists.push((p, need));
            }
            continue;
        }
        // q * c = p * coordinate j + kappa, kappa constant: c in [lo, hi] cuts coordinate j
        // to one interval.
        let clip = (el.len() == 1)
            .then(|| {
                let (v, g) = el[0];
                let j = coord
                    .iter()
                    .position(|x| x.1.is_some_and(|(u, _)| u == v))?;
                let (_, a) = coord[j].1?;
                let gg = super::normalize::gcd(g, a);
                let (mut p, mut q) = (g / gg, a / gg);
                if q < 0 {
                    (p, q) = (-p, -q);
                }
                let full = canonical(coord[j].0.add(Expr::var(v).mul(Expr::constant(a))));
                let kappa = canonical(c.mul(Expr::constant(q)).sub(full.mul(Expr::constant(p))));
                let kappa = kappa.as_const()?;
                let lo = iv.lo.checked_mul(q)?.checked_sub(kappa)?;
                let hi = iv.hi.checked_mul(q)?.checked_sub(kappa)?;
                let ar = crate::expr::arith::ceil_div;
                let fl = crate::expr::arith::floor_div;
                let bound = if p > 0 {
                    Interval::new(ar(lo, p)?, fl(hi, p))
                } else {
                    Interval::new(ar(hi, p)?, fl(lo, p))
                };
                Some((j, bound))
            })
            .flatten();
        match clip {
            Some((j, b)) => clips[j] = clips[j].intersect(&b),
            // A cut over several coordinates: the tile stays the box, and the cut becomes
            // its mask (which elements of the box a partial tile reads), as a masked load
            // of an emitter does. Only possible when every element variable of the cut is
            // the element variable of a coordinate.
            None => {
                let in_coords = el
                    .iter()
                    .all(|&(v, _)| coord.iter().any(|x| x.1.is_some_and(|(u, _)| u == v)));
                if !in_coords {
                    return Err(NotATile::new(format!(
                        "`{text}` cuts the tile along elements that no coordinate of the tile moves with (a partial tile that is not a masked box)"
                    )));
                }
                masks.push((c, iv));
            }
        }
    }
    masks.extend(gap_masks);
    build(&w, map, coord, clips, exists, masks)
}

fn build(
    w: &Work,
    map: &IndexingMap,
    coord: Vec<(Expr, Option<(u32, i64)>)>,
    clips: Vec<Interval>,
    exists: Vec<(Expr, Interval)>,
    masks: Vec<(Expr, Interval)>,
) -> Result<OperandTile, NotATile> {
    let n = map.dims.len();
    let nr = map.runtimes.len();
    let nk = coord.iter().filter(|c| c.1.is_some()).count();
    // Working index -> tile-map index: t_i stay, runtimes go after the k's.
    let rename = |v: u32| -> u32 {
        let v = v as usize;
        if v < n {
            v as u32
        } else {
            (v + nk) as u32
        }
    };
    let dims: Vec<Variable> = (0..n)
        .map(|i| Variable {
            name: format!("t{i}"),
            bounds: w.bounds[i],
        })
        .collect();
    let runtimes: Vec<Variable> = map.runtimes.clone();
    let mut ranges = Vec::new();
    let mut offsets = Vec::new();
    let mut sizes = Vec::new();
    let mut strides = Vec::new();
    let mut results = Vec::new();
    let mut constraints: Vec<(Expr, Interval)> = Vec::new();
    for (j, (off, var)) in coord.iter().enumerate() {
        offsets.push(*off);
        let off = canonical(off.rename(&rename));
        match var {
            Some((v, a)) => {
                let k = (n + ranges.len()) as u32;
                ranges.push(Variable {
                    name: format!("k{j}"),
                    bounds: Interval::new(0, w.ext(*v) - 1),
                });
                sizes.push(w.ext(*v));
                strides.push(*a);
                results.push(canonical(off.add(Expr::var(k).mul(Expr::constant(*a)))));
            }
            None => {
                sizes.push(1);
                strides.push(1);
                results.push(off);
            }
        }
        if !clips[j].is_full() {
            constraints.push((results[j], clips[j]));
        }
    }
    let _ = nr;
    for (e, iv) in exists {
        constraints.push((canonical(e.rename(&rename)), iv));
    }
    // Masks: over the tile's variables, each element variable of a coordinate becoming
    // that coordinate's k (shifted by its lower bound, which the offset absorbed).
    let mut mask_exprs = Vec::new();
    for (e, iv) in masks {
        let mut kpos = 0u32;
        let mut by: Vec<(u32, Expr)> = Vec::new();
        for (off, var) in coord.iter() {
            let _ = off;
            if let Some((v, _)) = var {
                let lo = w.bounds[*v as usize].lo;
                by.push((*v, Expr::var(n as u32 + kpos).add(Expr::constant(lo))));
                kpos += 1;
            }
        }
        let mut f = |v: u32| match by.iter().find(|b| b.0 == v) {
            Some(&(_, x)) => x,
            None => Expr::var(rename(v)),
        };
        let m = canonical(e.substitute(&mut f));
        constraints.push((m, iv));
        mask_exprs.push((m, iv));
    }
    let tile_map = IndexingMap::new(dims.clone(), ranges, runtimes.clone(), results, constraints);
    let offset_map = IndexingMap::new(dims, vec![], runtimes, offsets.clone(), vec![]);
    Ok(OperandTile {
        offsets: offset_map,
        sizes,
        strides,
        clips,
        masks: mask_exprs,
        map: tile_map,
    })
}
