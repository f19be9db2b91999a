//! Which reductions a body reads per row: the analysis behind
//! [`Strategy::RowNormalization`](super::launch::Strategy::RowNormalization), below the
//! launch that decides with it and the emitters that write it (launch → emit, one way).

use super::spec::{Body, KernelSpec, Root, Tensor};
use crate::expr::Expr;
use crate::interval::{range_of, Interval};
use crate::map::{IndexingMap, Variable};
use crate::MapError;
use std::collections::{HashMap, HashSet};

/// `ctx` then `map`, by substitution: the variables are `ctx`'s, then `map`'s range variables
/// (renamed when they clash). Results are not canonicalized (this is the naive form).
pub fn substitute(ctx: &IndexingMap, map: &IndexingMap) -> Result<IndexingMap, MapError> {
    if map.results.is_empty() && map.dims.is_empty() {
        return Ok(IndexingMap {
            results: vec![],
            ..ctx.clone()
        });
    }
    if ctx.results.len() != map.dims.len() {
        return Err(MapError::ComposeArity {
            results: ctx.results.len(),
            dims: map.dims.len(),
        });
    }
    let n_ctx = ctx.num_vars() as u32;
    let mut names: Vec<String> = ctx.names();
    let mut ranges = ctx.ranges.clone();
    for v in &map.ranges {
        let mut name = v.name.clone();
        let mut k = 1;
        while names.contains(&name) {
            name = format!("{}_{k}", v.name);
            k += 1;
        }
        names.push(name.clone());
        ranges.push(Variable {
            name,
            bounds: v.bounds,
        });
    }
    if !map.runtimes.is_empty() || !ctx.runtimes.is_empty() {
        return Err(MapError::Other(
            "runtime variables cannot be emitted yet".into(),
        ));
    }
    let nd = map.dims.len() as u32;
    let mut sub = |v: u32| -> Expr {
        if v < nd {
            ctx.results[v as usize]
        } else {
            Expr::var(n_ctx + (v - nd))
        }
    };
    let results: Vec<Expr> = map.results.iter().map(|r| r.substitute(&mut sub)).collect();
    let mut constraints = ctx.constraints.clone();
    constraints.extend(
        map.constraints
            .iter()
            .map(|&(e, iv)| (e.substitute(&mut sub), iv)),
    );
    for (i, dv) in map.dims.iter().enumerate() {
        let e = ctx.results[i];
        let r = range_of(e, &ctx.bounds());
        if !dv.bounds.is_full() && !dv.bounds.contains_interval(&r) {
            constraints.push((e, dv.bounds));
        }
    }
    let mut out = IndexingMap {
        dims: ctx.dims.clone(),
        ranges,
        runtimes: vec![],
        results,
        constraints,
        is_simplified: false,
        // Empty where either is: a pad's operand map over an empty operand is KNOWN EMPTY
        // with no constraint left to say so, and the guard built from it must never load.
        status: if map.is_known_empty() {
            map.status
        } else {
            ctx.status
        },
    };
    out.is_simplified = false;
    Ok(out)
}

/// Variable 0 spread over the output dimensions `dims` (outermost first) as a linear index
/// in that order: `results[d]` is `v0 floordiv (extent of the dims inside d) mod extent(d)`
/// (no `mod` on the outermost).
pub(crate) fn delinearize(
    out: &Tensor,
    dims: &[usize],
    results: &mut [Expr],
) -> Result<(), MapError> {
    delinearize_var(out, dims, results, 0)
}

/// [`delinearize`] of variable `var`.
fn delinearize_var(
    out: &Tensor,
    dims: &[usize],
    results: &mut [Expr],
    var: u32,
) -> Result<(), MapError> {
    let mut inner = 1i64;
    for (p, &d) in dims.iter().enumerate().rev() {
        let q = Expr::var(var).floordiv(Expr::constant(inner));
        results[d] = if p == 0 {
            q
        } else {
            q.modulo(Expr::constant(out.dims[d]))
        };
        inner = inner
            .checked_mul(out.dims[d])
            .ok_or_else(|| MapError::Overflow("the output size".into()))?;
    }
    Ok(())
}

/// `(r, c) -> results`, `r` in `[0, rows - 1]` and `c` in `[0, cols - 1]`, simplified.
fn rc_map(rows: i64, cols: i64, results: Vec<Expr>) -> IndexingMap {
    let m = IndexingMap::new(
        vec![
            Variable::new("r", 0, rows - 1),
            Variable::new("c", 0, cols - 1),
        ],
        vec![],
        vec![],
        results,
        vec![],
    );
    crate::simplify::simplify(&m, &Default::default()).map
}

/// `(r, c) -> (output index)`: `c` runs along the output's minor physical dimension, `r`
/// over the others together (rows, in physical order).
pub fn row_map(out: &Tensor) -> Result<Option<IndexingMap>, MapError> {
    let phys = out.physical_dims();
    let Some((&minor, outer)) = phys.split_last() else {
        return Ok(None);
    };
    if outer.is_empty() {
        return Ok(None);
    }
    let cols = out.dims[minor];
    let rows = out.num_elements()? / cols.max(1);
    let mut results = vec![Expr::constant(0); out.rank()];
    results[minor] = Expr::var(1);
    delinearize(out, outer, &mut results)?;
    Ok(Some(rc_map(rows, cols, results)))
}

/// `(r, c) -> (output index)` with every output element a row of its own: `r` runs over
/// the output's elements in physical order, `c` over `[0, 0]`.
pub fn element_rows(out: &Tensor) -> Result<IndexingMap, MapError> {
    let phys = out.physical_dims();
    let rows = out.num_elements()?;
    let mut results = vec![Expr::constant(0); out.rank()];
    delinearize(out, &phys, &mut results)?;
    Ok(rc_map(rows.max(1), 1, results))
}

/// The longest row [`gathered_rows`] gives a warp (elements of the output per reduction
/// row): past it, the output's own rows ([`row_map`]) spread the work over more warps.
const GATHERED_MAX_COLS: i64 = 8192;

/// The output dimensions the reductions `b` reads depend on, at the output index `ctx`
/// (variables `0..n` of `ctx` are the output's dimensions): marked in `deps`. `false` where
/// the body has what the row kernel does not write per row (as [`per_row`]).
fn reduction_deps(
    spec: &KernelSpec,
    b: &Body,
    ctx: &IndexingMap,
    n: u32,
    deps: &mut [bool],
) -> Result<bool, MapError> {
    walk_reductions(spec, b, ctx, 0, &mut |_, m| {
        // Simplified, so that a dimension written and cancelled (`(d1 * 128 + d3)
        // floordiv 1024` of a bitcast) does not count; the dimensions keep their numbers.
        let s = crate::simplify::simplify(m, &Default::default()).map;
        if s.dims.len() != m.dims.len() {
            return Ok(None);
        }
        let own = s.dims.len() as u32;
        let mut mark = |v: u32| {
            if v < n {
                deps[v as usize] = true;
            }
        };
        for r in &s.results {
            r.visit_vars(&mut mark);
        }
        for (e, _) in &s.constraints {
            let mut has_own = false;
            e.visit_vars(&mut |v| has_own |= v >= own);
            if has_own {
                e.visit_vars(&mut mark);
            }
        }
        Ok(Some(m.clone()))
    })
}

/// `(r, c) -> (output index)` where a row is every output element that reads the same
/// reductions: `r` over the output dimensions the reductions depend on, `c` over the others
/// (each in physical order). A layer norm written transposed (`[b, t, h * 128 + d]` →
/// `[b, h, t, d]`, the transformer block's `fusion.23`) reduces over `b, t`: its output rows
/// of 128 (`d`) would fold the same 1024 elements once for each of the 8 heads; gathered,
/// a row is the 1024 elements of one `(b, t)`, folded once (XLA's Triton tile covers them,
/// `[1, 8, 2, 128]`). `None` unless the gathered rows are longer than the output's own rows
/// and keep the minor physical dimension along the row (coalesced lanes).
fn gathered_rows(spec: &KernelSpec) -> Result<Option<IndexingMap>, MapError> {
    let out = &spec.output;
    let n = out.rank();
    let phys = out.physical_dims();
    let Some(&minor) = phys.last() else {
        return Ok(None);
    };
    let ctx = IndexingMap::identity(&out.dims);
    let mut deps = vec![false; n];
    if !reduction_deps(spec, &spec.functions[0].body, &ctx, n as u32, &mut deps)? {
        return Ok(None);
    }
    let row_dims: Vec<usize> = phys.iter().copied().filter(|&d| deps[d]).collect();
    let col_dims: Vec<usize> = phys.iter().copied().filter(|&d| !deps[d]).collect();
    // The output's own rows when the reductions depend on all but the minor dimension.
    let extra_cols = col_dims
        .iter()
        .filter(|&&d| d != minor && out.dims[d] > 1)
        .count();
    if deps[minor] || row_dims.is_empty() || extra_cols == 0 {
        return Ok(None);
    }
    let extent = |ds: &[usize]| -> Option<i64> {
        ds.iter().try_fold(1i64, |a, &d| a.checked_mul(out.dims[d]))
    };
    let (Some(rows), Some(cols)) = (extent(&row_dims), extent(&col_dims)) else {
        return Ok(None);
    };
    if cols > GATHERED_MAX_COLS || rows < 1 || cols < 1 {
        return Ok(None);
    }
    let mut results = vec![Expr::constant(0); n];
    delinearize_var(out, &row_dims, &mut results, 0)?;
    delinearize_var(out, &col_dims, &mut results, 1)?;
    Ok(Some(rc_map(rows, cols, results)))
}

/// The fewest elements any reduction of `spec` folds (`i64::MAX` with none).
pub(crate) fn shortest_reduction(spec: &KernelSpec) -> i64 {
    let mut least = i64::MAX;
    for f in &spec.functions {
        f.body.visit(&mut |b| {
            if let Body::Reduce { map, .. } = b {
                let n = map
                    .ranges
                    .iter()
                    .map(|v| v.bounds.hi.saturating_sub(v.bounds.lo).saturating_add(1))
                    .fold(1i64, |a, x| a.saturating_mul(x.max(0)));
                least = least.min(n);
            }
        });
    }
    least
}

/// Whether every reduction of `spec` folds its operand's last dimension (the minor one, in
/// the default layout): then a warp's lanes read consecutive elements. A reduction of
/// another dimension read by a warp per output element strides through memory; the loop,
/// each thread folding its own elements next to its neighbour's, reads it coalesced.
fn minor_reductions(spec: &KernelSpec) -> bool {
    let mut ok = true;
    for f in &spec.functions {
        f.body.visit(&mut |b| {
            if let Body::Reduce { map, .. } = b {
                let nd = map.dims.len() as u32;
                ok &= map
                    .results
                    .last()
                    .and_then(|r| r.as_var())
                    .is_some_and(|v| v >= nd);
            }
        });
    }
    ok
}

/// The rows [`Strategy::RowNormalization`] runs `spec` over, `(r, c) -> (output index)`, or
/// `None` when it does not suit: an elementwise root with one output that reads at least
/// one reduction, every reduction it reads (through calls, and inside other reductions)
/// depending on the row alone. The rows are every output element that reads the same
/// reductions when those are more than an output row ([`gathered_rows`], a layer norm
/// written transposed); else the output's ([`row_map`], a softmax); failing that, each output element its own row ([`element_rows`]) when every reduction depends on
/// the output element alone and folds at least a warp's worth of elements — a reduction
/// under an elementwise epilogue, `abs(reduce(exp(x - m)))` (XLA's reduction hero with its
/// epilogue, issue 28: as a loop, each thread folded a whole row alone, 6x XLA's time).
pub fn rows_of(spec: &KernelSpec) -> Result<Option<IndexingMap>, MapError> {
    if spec.root != Root::Elementwise
        || !spec.more_outputs.is_empty()
        || spec.root_reduction().is_some()
        || spec.functions.is_empty()
    {
        return Ok(None);
    }
    if let Some(lm) = gathered_rows(spec)? {
        let mut found = false;
        if per_row(spec, &spec.functions[0].body, &lm, &mut found, 0)? && found {
            return Ok(Some(lm));
        }
    }
    if let Some(lm) = row_map(&spec.output)? {
        let mut found = false;
        if per_row(spec, &spec.functions[0].body, &lm, &mut found, 0)? && found {
            return Ok(Some(lm));
        }
    }
    if shortest_reduction(spec) < 32 || !minor_reductions(spec) {
        return Ok(None);
    }
    let em = element_rows(&spec.output)?;
    let mut found = false;
    Ok((per_row(spec, &spec.functions[0].body, &em, &mut found, 0)? && found).then_some(em))
}

/// Whether the elements of a row normalization read an input at an index that moves with
/// the column and not with the row: an operand broadcast along the rows (a norm's scale or
/// bias), which the rows of one thread can share. Reads inside the row's reductions are
/// not counted (those are per row).
pub fn reads_broadcast_along_rows(spec: &KernelSpec) -> Result<bool, MapError> {
    let Some(lm) = rows_of(spec)? else {
        return Ok(false);
    };
    // `seen`: the calls walked already, each of which found nothing (else the walk ended).
    fn walk(
        spec: &KernelSpec,
        b: &Body,
        ctx: &IndexingMap,
        depth: usize,
        seen: &mut HashSet<(usize, IndexingMap)>,
    ) -> Result<bool, MapError> {
        if depth > spec.functions.len() + 64 {
            return Err(MapError::Other(
                "the functions of the kernel call each other in a cycle".into(),
            ));
        }
        let mut items = Vec::new();
        b.visit(&mut |x| match x {
            Body::Load { input, map } => items.push((Some(*input), None, map.clone())),
            Body::Call { func, map } => items.push((None, Some(*func), map.clone())),
            _ => {}
        });
        for (input, func, map) in items {
            let at = substitute(ctx, &map)?;
            if input.is_some() {
                let at = crate::simplify::simplify(&at, &Default::default()).map;
                let by_row = at.results.iter().any(|e| e.uses_var(0));
                let by_col = at.results.iter().any(|e| e.uses_var(1));
                if by_col && !by_row {
                    return Ok(true);
                }
            } else if let Some(f) = func.and_then(|f| spec.functions.get(f)) {
                let key = (func.unwrap_or(0), at);
                if seen.contains(&key) {
                    continue;
                }
                if walk(spec, &f.body, &key.1, depth + 1, seen)? {
                    return Ok(true);
                }
                seen.insert(key);
            }
        }
        Ok(false)
    }
    walk(spec, &spec.functions[0].body, &lm, 0, &mut HashSet::new())
}

/// Whether `spec` suits [`Strategy::RowNormalization`] ([`rows_of`]).
pub fn applies(spec: &KernelSpec) -> Result<bool, MapError> {
    Ok(rows_of(spec)?.is_some())
}

/// The reductions `b` reads at the index `ctx` gives are all per row (`ctx`'s variable 0 is
/// the row); `found` is set when there is one.
pub(crate) fn per_row(
    spec: &KernelSpec,
    b: &Body,
    ctx: &IndexingMap,
    found: &mut bool,
    depth: usize,
) -> Result<bool, MapError> {
    walk_reductions(spec, b, ctx, depth, &mut |ctx, m| {
        Ok(canonical(ctx, m).inspect(|_| *found = true))
    })
}

/// Walks `b` at the index `ctx`, through calls, into every reduction it reads: at each,
/// `at_reduce(ctx, m)` (`m` the reduction's map from `ctx`'s variables and its own) gives
/// the index its body is walked at, or `None` to stop (`false`). `false` too where the body
/// has what the row kernel does not write per row (guards, dynamic calls, tuples).
fn walk_reductions(
    spec: &KernelSpec,
    b: &Body,
    ctx: &IndexingMap,
    depth: usize,
    at_reduce: &mut dyn FnMut(&IndexingMap, &IndexingMap) -> Result<Option<IndexingMap>, MapError>,
) -> Result<bool, MapError> {
    walk_reductions_memo(spec, b, ctx, depth, at_reduce, &mut HashMap::new())
}

/// [`walk_reductions`], with the calls walked so far: a function called again at the same
/// index gives the same answer (the callers' `at_reduce` only mark), and walking it again
/// would make the walk exponential in the depth of shared functions (threefry's rounds).
fn walk_reductions_memo(
    spec: &KernelSpec,
    b: &Body,
    ctx: &IndexingMap,
    depth: usize,
    at_reduce: &mut dyn FnMut(&IndexingMap, &IndexingMap) -> Result<Option<IndexingMap>, MapError>,
    memo: &mut HashMap<(usize, IndexingMap), bool>,
) -> Result<bool, MapError> {
    if depth > spec.functions.len() + 64 {
        return Ok(false);
    }
    let go = |b: &Body,
              at: &mut dyn FnMut(
        &IndexingMap,
        &IndexingMap,
    ) -> Result<Option<IndexingMap>, MapError>,
              memo: &mut HashMap<(usize, IndexingMap), bool>| {
        walk_reductions_memo(spec, b, ctx, depth + 1, at, memo)
    };
    Ok(match b {
        Body::Const(_) | Body::Load { .. } | Body::Index { .. } | Body::Opaque { .. } => true,
        // Written per element by the plain body writer, not per row.
        Body::Guard { .. } | Body::DynCall { .. } | Body::ReduceTuple { .. } | Body::Param(..) => {
            false
        }
        Body::Unary(_, a) | Body::Convert(_, a) => go(a, at_reduce, memo)?,
        Body::Binary(_, a, c) | Body::Compare(_, a, c) => {
            go(a, at_reduce, memo)? && go(c, at_reduce, memo)?
        }
        Body::Select(p, a, c) => {
            go(p, at_reduce, memo)? && go(a, at_reduce, memo)? && go(c, at_reduce, memo)?
        }
        Body::Call { func, map } => {
            let Some(f) = spec.functions.get(*func) else {
                return Ok(false);
            };
            let at = substitute(ctx, map)?;
            let key = (*func, at);
            if let Some(&r) = memo.get(&key) {
                return Ok(r);
            }
            let r = walk_reductions_memo(spec, &f.body, &key.1, depth + 1, at_reduce, memo)?;
            memo.insert(key, r);
            r
        }
        Body::Reduce { func, map, .. } => {
            let Some(f) = spec.functions.get(*func) else {
                return Ok(false);
            };
            let m = substitute(ctx, map)?;
            match at_reduce(ctx, &m)? {
                Some(inner) => {
                    walk_reductions_memo(spec, &f.body, &inner, depth + 1, at_reduce, memo)?
                }
                None => false,
            }
        }
    })
}

/// A reduction's map `m` (from `ctx`'s variables and its own, after them) as a map from the
/// row (variable 0 of `ctx`) and its own variables `s0, ..` alone; `None` when its index or
/// its constraints depend on another variable of `ctx` (a column, another reduction's
/// variable): then it is not per row.
pub(crate) fn canonical(ctx: &IndexingMap, m: &IndexingMap) -> Option<IndexingMap> {
    let first_new = (m.dims.len() + ctx.ranges.len()) as u32;
    let mut ok = true;
    let mut rename = |v: u32| -> Expr {
        if v == 0 {
            Expr::var(0)
        } else if v >= first_new {
            Expr::var(1 + v - first_new)
        } else {
            ok = false;
            Expr::var(0)
        }
    };
    let results: Vec<Expr> = m
        .results
        .iter()
        .map(|r| r.substitute(&mut rename))
        .collect();
    // A constraint without the reduction's own variables is one on the scope's index
    // (substitute adds the callee's dims' bounds), which the scope's guards already keep.
    let constraints: Vec<_> = m.constraints[ctx.constraints.len()..]
        .iter()
        .filter(|(e, _)| {
            let mut own = false;
            e.visit_vars(&mut |v| own |= v >= first_new);
            own
        })
        .map(|&(e, iv)| (e.substitute(&mut rename), iv))
        .collect();
    if !ok || m.dims.is_empty() {
        return None;
    }
    let ranges: Vec<Variable> = m.ranges[ctx.ranges.len()..]
        .iter()
        .enumerate()
        .map(|(k, v)| Variable::new(format!("s{k}"), v.bounds.lo, v.bounds.hi))
        .collect();
    Some(IndexingMap::new(
        vec![m.dims[0].clone()],
        ranges,
        vec![],
        results,
        constraints,
    ))
}

/// The scope of a row's elements in [`Strategy::RowNormalization`]'s kernel:
/// `(r, lane)[col, unroll_id] -> (output index)`, lane `lane` of the row's `row_threads`
/// taking the row's elements `lane + col * row_threads` (with `vector` elements a lane,
/// `(lane + col * row_threads) * vector + unroll_id`); `rows` the map [`rows_of`] gives.
/// The emitter writes it (`emit::cuda_rows`) and the coalescing analysis reads it.
///
/// [`Strategy::RowNormalization`]: super::launch::Strategy::RowNormalization
pub fn element_scope(
    lm: &IndexingMap,
    row_threads: i64,
    vector: i64,
) -> Result<IndexingMap, MapError> {
    let rows = lm.dims[0].bounds.hi + 1;
    let cols = lm.dims[1].bounds.hi + 1;
    let rt = row_threads;
    if vector < 1 || cols % vector != 0 {
        return Err(MapError::Other(format!(
            "vector={vector} does not divide the row's {cols} elements"
        )));
    }
    let vectors = cols / vector;
    let steps = (vectors + rt - 1) / rt;
    let lane_vec = Expr::var(1).add(Expr::var(2).mul(Expr::constant(rt)));
    let c = if vector > 1 {
        lane_vec.mul(Expr::constant(vector)).add(Expr::var(3))
    } else {
        lane_vec
    };
    let mut sub = |v: u32| -> Expr {
        if v == 0 {
            Expr::var(0)
        } else {
            c
        }
    };
    let results = lm.results.iter().map(|r| r.substitute(&mut sub)).collect();
    let mut ranges = vec![Variable::new("col", 0, steps - 1)];
    if vector > 1 {
        ranges.push(Variable::new("unroll_id", 0, vector - 1));
    }
    Ok(IndexingMap::new(
        vec![
            Variable::new("r", 0, rows - 1),
            Variable::new("lane", 0, rt - 1),
        ],
        ranges,
        vec![],
        results,
        // `c in [0, cols - 1]`, free of `unroll_id`.
        vec![(lane_vec, Interval::new(0, vectors - 1))],
    ))
}

/// How the row's lanes share one reduction of the row ([`lane_split`]).
pub struct LaneSplit {
    /// `(r, lane)[j, unroll_id] -> (the reduced function's index)`.
    pub map: IndexingMap,
    /// Elements a lane takes at a time (the launch's vector where it divides the
    /// reduction, else 1).
    pub vector: i64,
    /// The lane's steps (`j`'s extent).
    pub steps: i64,
}

/// A reduction of the row, `canon` (`(r)[s0, ..] -> (index)`, see [`canonical`]), split
/// over the row's `row_threads` lanes as the kernel folds it: its elements, linear over
/// its own variables (row-major), lane `l` taking `l, l + row_threads, ..`, `vector` at a
/// time where `vector` divides the reduction.
pub fn lane_split(
    canon: &IndexingMap,
    row_threads: i64,
    vector: i64,
) -> Result<LaneSplit, MapError> {
    let rt = row_threads;
    let sizes: Vec<i64> = canon
        .ranges
        .iter()
        .map(|v| v.bounds.hi - v.bounds.lo + 1)
        .collect();
    let n = sizes
        .iter()
        .try_fold(1i64, |a, &b| a.checked_mul(b))
        .ok_or_else(|| MapError::Overflow("a reduction's size".into()))?;
    // `vector` consecutive elements a lane (`unroll_id`, innermost) where they divide the
    // reduction: lane `l` takes vectors l, l + row_threads, ..
    let vector = if vector > 1 && n % vector == 0 {
        vector
    } else {
        1
    };
    let vectors = n / vector;
    let steps = (vectors + rt - 1) / rt;
    let lane_vec = Expr::var(1).add(Expr::var(2).mul(Expr::constant(rt)));
    let lin = if vector > 1 {
        lane_vec.mul(Expr::constant(vector)).add(Expr::var(3))
    } else {
        lane_vec
    };
    let mut own = Vec::new();
    let mut inner = 1i64;
    for (k, &s) in sizes.iter().enumerate().rev() {
        let q = lin.floordiv(Expr::constant(inner));
        let q = if k == 0 {
            q
        } else {
            q.modulo(Expr::constant(s))
        };
        own.push(q.add(Expr::constant(canon.ranges[k].bounds.lo)));
        inner *= s;
    }
    own.reverse();
    let mut sub = |v: u32| -> Expr {
        if v == 0 {
            Expr::var(0)
        } else {
            own[(v - 1) as usize]
        }
    };
    let results = canon
        .results
        .iter()
        .map(|r| r.substitute(&mut sub))
        .collect();
    let mut constraints: Vec<(Expr, Interval)> = canon
        .constraints
        .iter()
        .map(|&(e, iv)| (e.substitute(&mut sub), iv))
        .collect();
    // The same condition as `lin in [0, n - 1]`, free of `unroll_id`.
    constraints.push((lane_vec, Interval::new(0, vectors - 1)));
    let mut ranges = vec![Variable::new("j", 0, steps - 1)];
    if vector > 1 {
        ranges.push(Variable::new("unroll_id", 0, vector - 1));
    }
    Ok(LaneSplit {
        map: IndexingMap::new(
            vec![canon.dims[0].clone(), Variable::new("lane", 0, rt - 1)],
            ranges,
            vec![],
            results,
            constraints,
        ),
        vector,
        steps,
    })
}

/// Whether a row reduction at the root reads, in its operand, reductions of its own row
/// (the sum of `exp(x - max)`), all of them per row: the launch's warp computes them in
/// order before the root reduction.
pub fn nested_root(spec: &KernelSpec) -> Result<bool, MapError> {
    let Some((_, callee)) = spec.root_reduction() else {
        return Ok(false);
    };
    if !spec.more_outputs.is_empty() {
        return Ok(false);
    }
    let mut inner = false;
    let mut calls = vec![callee];
    let mut seen = vec![false; spec.functions.len()];
    while let Some(f) = calls.pop() {
        if f >= seen.len() || seen[f] {
            continue;
        }
        seen[f] = true;
        spec.functions[f].body.visit(&mut |b| match b {
            Body::Reduce { .. } => inner = true,
            Body::Call { func, .. } => calls.push(*func),
            _ => {}
        });
    }
    if !inner {
        return Ok(false);
    }
    let mut found = false;
    per_row(
        spec,
        &spec.functions[0].body,
        &root_scope(spec, 1)?,
        &mut found,
        0,
    )
}

/// The scope of a root reduction's output: `(r, lane) -> (output index)`, `r` the linear
/// output index (the row reduction's row), in the output's logical order as the row
/// reduction launch numbers its rows.
pub fn root_scope(spec: &KernelSpec, row_threads: i64) -> Result<IndexingMap, MapError> {
    let out = &spec.output;
    let rows = out.num_elements()?;
    let mut results = Vec::new();
    let mut inner = 1i64;
    for (d, &n) in out.dims.iter().enumerate().rev() {
        let q = Expr::var(0).floordiv(Expr::constant(inner));
        results.push(if d == 0 {
            q
        } else {
            q.modulo(Expr::constant(n))
        });
        inner = inner
            .checked_mul(n)
            .ok_or_else(|| MapError::Overflow("the output size".into()))?;
    }
    results.reverse();
    Ok(IndexingMap::new(
        vec![
            Variable::new("r", 0, rows - 1),
            Variable::new("lane", 0, row_threads - 1),
        ],
        vec![],
        vec![],
        results,
        vec![],
    ))
}

/// Whether `launch`, a row reduction, is written by the row kernel (`emit::cuda_rows`): at
/// one element a lane, with reductions of its own row nested in its operand
/// ([`nested_root`]), which the row's lanes compute together, once per row.
pub fn row_kernel_reduction(
    spec: &KernelSpec,
    launch: &super::launch::Launch,
) -> Result<bool, MapError> {
    Ok(launch.strategy == super::launch::Strategy::RowReduction
        && launch.config.vector == 1
        && nested_root(spec)?)
}
