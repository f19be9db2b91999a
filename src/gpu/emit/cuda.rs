//! CUDA C for a launch: one `__global__` entry whose thread and block ids are the dims of
//! the launch's thread-id map, loops over its range variables (`vector_elem`, `unroll_id`,
//! `row`, `col`), a bounds check only for the constraints the simplified map keeps, and one
//! `__device__` function per further partition.
//!
//! A tiled transpose stages the transposed inputs through a `__shared__` 32×33 tile (the
//! extra column avoids bank conflicts): phase 1 reads rows of the input with the read map,
//! `__syncthreads()`, phase 2 writes rows of the output with the write map. Reductions
//! accumulate per thread over the launch's loop variable; a row reduction then sums the
//! warp's 32 partial results with `__shfl_down_sync` and lane 0 writes.
//!
//! Compiled at run time with NVRTC (`bench/cuda.rs`).

use super::types;
use super::{
    c_expr, c_ident, helper_functions, input_params, simplified, BodyWriter, Emitted, Target,
};
use crate::expr::Expr;
use crate::gpu::launch::{reads_through_tile, Launch, Strategy, TILE};
use crate::gpu::spec::{is_identity, Body, ElemType, KernelSpec};
use crate::map::IndexingMap;
use crate::MapError;

/// The thread and block ids, as the dims of the thread-id maps name them.
fn ids(it: &str) -> Vec<String> {
    let mut v = Vec::new();
    for (pre, var) in [("th", "threadIdx"), ("bl", "blockIdx")] {
        for c in ["x", "y", "z"] {
            v.push(format!("  const {it} {pre}_{c} = {var}.{c};"));
        }
    }
    v
}

/// After each thread and block id the kernel keeps, the range the launch gives it, as
/// `__builtin_assume(th_x >= 0 && th_x <= 127);`. The kernel is written for that launch
/// (its maps' domains are these ranges, and the bounds checks they make needless are left
/// out), so the assumption holds; told it, NVRTC divides and takes remainders of the ids by
/// powers of two with unsigned shifts and masks instead of the signed sequence (a shift of
/// the sign, an add, a shift for each `th_x / 8`), as the simplified maps mean them.
/// The CPU's CUDA runner (`cuda_on_cpu.h`) reads it as nothing where the compiler has no
/// `__builtin_assume`.
fn assume_ids(lines: Vec<String>, launch: &Launch) -> Vec<String> {
    let mut out = Vec::with_capacity(lines.len() + 6);
    for l in lines {
        let id = declared(&l).filter(|n| {
            ["th_", "bl_"].iter().any(|p| n.starts_with(p))
                && (l.contains("= threadIdx.") || l.contains("= blockIdx."))
        });
        let range = id.and_then(|n| {
            let axis = ["x", "y", "z"].iter().position(|c| n.ends_with(c))?;
            let size = if n.starts_with("th_") {
                launch.block[axis]
            } else {
                launch.grid[axis]
            };
            Some((n.to_string(), size))
        });
        out.push(l);
        if let Some((n, size)) = range.filter(|(_, size)| *size >= 1) {
            out.push(format!(
                "  __builtin_assume({n} >= 0 && {n} <= {});",
                size - 1
            ));
        }
    }
    out
}

/// `NAME` when `line` is `const TYPE NAME = ...;`: emitted expressions have no side effects
/// (index arithmetic, loads, calls of the partitions' pure functions), but intrinsics
/// (`__shfl_down_sync`) are kept.
fn declared(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("const ")?;
    let (_, rest) = rest.split_once(' ')?;
    let (name, init) = rest.split_once(" = ")?;
    let ok = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && init.ends_with(';')
        && !init.contains("__");
    ok.then_some(name)
}

fn mentions(line: &str, name: &str) -> bool {
    let t = line.trim_start();
    if t.starts_with("//") {
        return false;
    }
    let is_id = |c: char| c.is_ascii_alphanumeric() || c == '_';
    line.match_indices(name).any(|(i, _)| {
        !line[..i].chars().next_back().is_some_and(is_id)
            && !line[i + name.len()..].chars().next().is_some_and(is_id)
    })
}

/// Whether `name` is read in `rest` before the block that declares it closes.
fn read_in_scope(rest: &[String], name: &str) -> bool {
    let mut depth = 0i64;
    for l in rest {
        if mentions(l, name) {
            return true;
        }
        let code = l.split("//").next().unwrap_or("");
        depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
        if depth < 0 {
            return false;
        }
    }
    false
}

/// Drops index declarations nothing reads (ids the launch does not use, naive multi-index
/// coordinates no map needs), until none is left: NVRTC warns about each.
fn prune_unused(mut lines: Vec<String>) -> Vec<String> {
    loop {
        let unused = (0..lines.len()).find(|&i| {
            declared(&lines[i]).is_some_and(|name| !read_in_scope(&lines[i + 1..], name))
        });
        match unused {
            Some(i) => {
                lines.remove(i);
            }
            None => return lines,
        }
    }
}

/// The further outputs of a tuple root, each its function at the scope's index (the same
/// index as output 0), stored through its own layout.
fn store_more_outputs(w: &mut BodyWriter, ctx: &IndexingMap, params: &str) -> Result<(), MapError> {
    store_more_outputs_where(w, ctx, params, &|_| true)
}

/// [`store_more_outputs`] for the outputs `n` (0 for `out1`) that `which` picks, each at its
/// map from the scope's index.
fn store_more_outputs_where(
    w: &mut BodyWriter,
    ctx: &IndexingMap,
    params: &str,
    which: &dyn Fn(usize) -> bool,
) -> Result<(), MapError> {
    let spec = w.spec;
    for (n, o) in spec.more_outputs.iter().enumerate() {
        if which(n) {
            let ck = super::more_output_scope(ctx, o)?;
            super::store_more_output(w, n, &ck, params)?;
        }
    }
    Ok(())
}

/// Special float values without `<math.h>` (NVRTC has no host headers): bit patterns.
const SPECIALS: &str = "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n#ifndef NAN\n#define NAN __int_as_float(0x7fffffff)\n#endif\n";

/// Guards for the constraints of `m` that mention only dims (`return`) or also loop
/// variables (`continue`), written as C.
fn guards(m: &IndexingMap, w: &mut BodyWriter, only_dims: bool) {
    guards_with(
        m,
        w,
        only_dims,
        if only_dims { "return" } else { "continue" },
    )
}

fn guards_with(m: &IndexingMap, w: &mut BodyWriter, only_dims: bool, action: &str) {
    let nd = m.dims.len() as u32;
    for &(e, iv) in &m.constraints {
        let mut uses_sym = false;
        e.visit_vars(&mut |v| uses_sym |= v >= nd);
        if uses_sym == only_dims {
            continue;
        }
        if let Some(cond) = super::outside(e, iv, &m.names(), &m.bounds()) {
            w.line(format!("if ({cond}) {action};"));
        }
    }
}

/// Guards for the thread and block ids whose bounds in `m` are narrower than the launch:
/// the simplifier folds a constraint such as `th_x floordiv 32 in [0, 19]` into the bound
/// of `th_x`, and the threads past it must still be switched off.
fn dim_guards(m: &IndexingMap, launch: &Launch, w: &mut BodyWriter, action: &str) {
    let sizes = [
        launch.block[0],
        launch.block[1],
        launch.block[2],
        launch.grid[0],
        launch.grid[1],
        launch.grid[2],
    ];
    for (d, &n) in m.dims.iter().zip(&sizes) {
        let mut parts = Vec::new();
        if d.bounds.lo > 0 {
            parts.push(format!("{} < {}", d.name, d.bounds.lo));
        }
        if d.bounds.hi < n - 1 {
            parts.push(format!("{} > {}", d.name, d.bounds.hi));
        }
        if !parts.is_empty() {
            w.line(format!("if ({}) {action};", parts.join(" || ")));
        }
    }
}

fn loops_open(m: &IndexingMap, w: &mut BodyWriter) {
    loops_open_vars(&m.ranges, w)
}

fn loops_open_vars(vars: &[crate::map::Variable], w: &mut BodyWriter) {
    for v in vars {
        if !super::I32_INDEX.contains_interval(&v.bounds) {
            super::index_width_needs_64();
        }
        // Short loops unrolled (a vector, a tile's rows); a long chunk loop left as a loop.
        if v.bounds.hi - v.bounds.lo < 64 {
            w.line("#pragma unroll");
        }
        w.line(format!(
            "for ({3} {0} = {1}; {0} <= {2}; ++{0}) {{",
            v.name, v.bounds.lo, v.bounds.hi, w.index_ty
        ));
        w.indent += 1;
    }
}
fn loops_close(m: &IndexingMap, w: &mut BodyWriter) {
    loops_close_n(m.ranges.len(), w)
}

fn loops_close_n(n: usize, w: &mut BodyWriter) {
    for _ in 0..n {
        w.indent -= 1;
        w.line("}");
    }
}

/// The CUDA vector type of 16 bytes holding elements of `t`.
pub(super) fn vector_type(t: ElemType) -> &'static str {
    match t {
        ElemType::F32 => "float4",
        ElemType::S32 => "int4",
        ElemType::F64 => "double2",
        ElemType::S64 => "longlong2",
        ElemType::U64 => "ulonglong2",
        _ => "uint4",
    }
}

/// The CUDA vector type of `vector` elements of `t` when they make 8 or 16 bytes (one
/// `ld.global.v2`/`.v4`), else `None`.
pub(super) fn vector_type_of(t: ElemType, vector: i64) -> Option<&'static str> {
    match t.bytes().checked_mul(vector)? {
        16 => Some(vector_type(t)),
        8 if vector >= 2 => Some(match t {
            ElemType::F32 => "float2",
            ElemType::S32 => "int2",
            _ => "uint2",
        }),
        _ => None,
    }
}

/// A row reduction's read of a parameter as one vector per step of the row (XLA's row
/// reduction reads `vector` adjacent elements of the row in one access): the reduced
/// function loads its parameter unchanged and the launch's `unroll_id` elements are
/// contiguous and aligned, every guard holding for the whole vector or none of it
/// ([`vector_base`]: then a guard checked at `unroll_id = 0` decides for all). Returns the
/// input, the vector type and the offset of the first element.
fn row_vector_read(
    spec: &KernelSpec,
    launch: &Launch,
    func: usize,
) -> Result<Option<(usize, &'static str, String)>, MapError> {
    let rm = &launch.read_map;
    let vector = launch.config.vector;
    if launch.strategy != Strategy::RowReduction
        || vector < 2
        || rm.ranges.last().is_none_or(|v| v.name != "unroll_id")
    {
        return Ok(None);
    }
    let Some(Body::Load { input, map }) = spec.functions.get(func).map(|f| &f.body) else {
        return Ok(None);
    };
    let t = &spec.inputs[*input];
    let Some(vt) = vector_type_of(t.elem, vector).filter(|_| is_identity(map, &t.dims)) else {
        return Ok(None);
    };
    Ok(vector_base(rm, map, &t.strides()?, vector)?.map(|base| (*input, vt, base)))
}

// The contiguity test's pieces live with the launch, which also decides vector widths
// with them.
use crate::gpu::launch::{multiple_of, split_on};

/// The offset of the element a loop thread reads (or writes) through `map` at `unroll_id
/// = 0`, as C, when the `vector` elements of `unroll_id` are contiguous and 16-byte aligned:
/// the simplified linear offset is `base + unroll_id` with `base` free of `unroll_id` and a
/// multiple of `vector`, and every constraint of the map that moves with `unroll_id` holds
/// for all `vector` elements or none — `base' + unroll_id in [lo, hi]` with `base'`, `lo`
/// and `hi + 1` multiples of `vector` (an operand's bounds, `(lane + col * 32) * 4 +
/// unroll_id in [0, 299]`, which the thread's own guards imply): then the vector access
/// touches exactly the elements the element accesses would. (Buffers start 256-byte
/// aligned, as cudaMalloc gives them.)
pub(super) fn vector_base(
    wm: &IndexingMap,
    map: &IndexingMap,
    strides: &[i64],
    vector: i64,
) -> Result<Option<String>, MapError> {
    vector_base_at(&super::substitute(wm, map)?, strides, vector)
}

/// [`vector_base`] of `m`, the map from the thread's ids to the element.
fn vector_base_at(
    m: &IndexingMap,
    strides: &[i64],
    vector: i64,
) -> Result<Option<String>, MapError> {
    let lin = Expr::linear_combination(&m.results, strides);
    let mut lm = m.clone();
    lm.results = vec![lin];
    let s = simplified(&lm);
    if s.status != crate::map::Status::Defined || s.results.len() != 1 {
        return Ok(None);
    }
    let Some(pos) = s.ranges.iter().position(|v| v.name == "unroll_id") else {
        return Ok(None);
    };
    let u = (s.dims.len() + pos) as u32;
    for &(c, iv) in &s.constraints {
        if !c.uses_var(u) {
            continue;
        }
        match split_on(c, u) {
            Some((rest, 1))
                if multiple_of(rest, vector)
                    && iv.lo.rem_euclid(vector) == 0
                    && iv
                        .hi
                        .checked_add(1)
                        .is_some_and(|h| h.rem_euclid(vector) == 0) => {}
            _ => return Ok(None),
        }
    }
    match split_on(s.results[0], u) {
        Some((rest, 1)) if multiple_of(rest, vector) => {
            Ok(Some(c_expr(rest, &s.names(), &s.bounds())))
        }
        _ => Ok(None),
    }
}

/// The scope of a thread-id map: naive scopes name the output multi-index `o0, o1, ..`
/// computed from it; simplified scopes use the map itself.
fn scope(w: &mut BodyWriter, m: &IndexingMap, naive: bool, prefix: &str) -> IndexingMap {
    if !naive {
        return m.clone();
    }
    let names: Vec<String> = (0..m.results.len())
        .map(|d| format!("{prefix}{d}"))
        .collect();
    for (d, &r) in m.results.iter().enumerate() {
        w.line(format!(
            "const {} {} = {};",
            w.index_ty,
            names[d],
            c_expr(r, &m.names(), &m.bounds())
        ));
    }
    let dims = names
        .iter()
        .zip(&m.results)
        .map(|(n, &r)| {
            let iv = m.range_of(r);
            crate::map::Variable {
                name: n.clone(),
                bounds: iv,
            }
        })
        .collect();
    IndexingMap::new(
        dims,
        vec![],
        vec![],
        (0..m.results.len() as u32)
            .map(crate::expr::Expr::var)
            .collect(),
        vec![],
    )
}

/// Whether `b` and every function it calls are straight-line — constants, loads,
/// element-wise ops, selects, indices and calls of such functions, with no guard,
/// reduction or run-time offset (whose code opens a scope of its own), so that
/// [`BodyWriter::inline_calls`] may write them in place — and, where they are, every load
/// they make in `out`, as `(input, map from the thread's ids to the element)`, each once.
/// `seen`: the calls walked, by function and the map to its index.
fn straight_line_loads(
    spec: &KernelSpec,
    b: &Body,
    ctx: &IndexingMap,
    out: &mut Vec<(usize, IndexingMap)>,
    seen: &mut Vec<(usize, IndexingMap)>,
    depth: usize,
) -> Result<bool, MapError> {
    if depth > 4096 {
        return Ok(false);
    }
    let mut all = |parts: &[&Body]| -> Result<bool, MapError> {
        for p in parts {
            if !straight_line_loads(spec, p, ctx, out, seen, depth + 1)? {
                return Ok(false);
            }
        }
        Ok(true)
    };
    Ok(match b {
        Body::Const(_) | Body::Index { .. } => true,
        Body::Load { input, map } => {
            let at = super::substitute(ctx, map)?;
            if !out.iter().any(|(i, m)| i == input && *m == at) {
                out.push((*input, at));
            }
            true
        }
        Body::Call { func, map } => {
            let at = super::substitute(ctx, map)?;
            if seen.iter().any(|(f, m)| f == func && *m == at) {
                return Ok(true);
            }
            seen.push((*func, at.clone()));
            match spec.functions.get(*func) {
                Some(f) => straight_line_loads(spec, &f.body, &at, out, seen, depth + 1)?,
                None => false,
            }
        }
        Body::Unary(_, a) | Body::Convert(_, a) => all(&[a])?,
        Body::Binary(_, a, c) | Body::Compare(_, a, c) => all(&[a, c])?,
        Body::Select(p, a, c) => all(&[p, a, c])?,
        _ => false,
    })
}

/// Every load the body `b` makes at the scope `ctx`, as [`straight_line_loads`] finds them,
/// and also inside guards (a `pad`'s) whose conditions do not move with variable `u`
/// (`unroll_id`), each with the C condition under which it is skipped (None: it always
/// happens): its vector can then be loaded before the loop over `u`, where the condition
/// says. The branch taken outside a guard loads nothing. A function called under a guard
/// is called there only (its registers, written in the guard's block, are not in scope
/// elsewhere). Returns false where the body is not of that form.
#[allow(clippy::too_many_arguments)]
fn window_loads(
    spec: &KernelSpec,
    b: &Body,
    ctx: &IndexingMap,
    u: u32,
    skip: Option<&str>,
    out: &mut Vec<(usize, IndexingMap, Option<String>)>,
    seen: &mut Vec<(usize, IndexingMap, Option<String>)>,
    depth: usize,
) -> Result<bool, MapError> {
    if depth > 4096 {
        return Ok(false);
    }
    let skip_s = skip.map(str::to_string);
    Ok(match b {
        Body::Const(_) | Body::Index { .. } => true,
        Body::Load { input, map } => {
            let at = super::substitute(ctx, map)?;
            match out.iter().find(|(i, m, _)| i == input && *m == at) {
                Some((_, _, c)) => *c == skip_s,
                None => {
                    out.push((*input, at, skip_s));
                    true
                }
            }
        }
        Body::Call { func, map } => {
            let at = super::substitute(ctx, map)?;
            if let Some((_, _, c)) = seen.iter().find(|(f, m, _)| f == func && *m == at) {
                // Written once, where it is in scope for both.
                return Ok(c.is_none() && skip.is_none());
            }
            seen.push((*func, at.clone(), skip_s));
            match spec.functions.get(*func) {
                Some(f) => window_loads(spec, &f.body, &at, u, skip, out, seen, depth + 1)?,
                None => false,
            }
        }
        Body::Guard {
            map,
            then,
            otherwise,
        } => {
            let gm = super::substitute(ctx, map)?;
            let own = &gm.constraints[ctx.constraints.len().min(gm.constraints.len())..];
            if own.iter().any(|(c, _)| c.uses_var(u)) {
                return Ok(false);
            }
            let (names, bounds) = (gm.names(), gm.bounds());
            let mut conds: Vec<String> = skip.map(|s| vec![s.to_string()]).unwrap_or_default();
            conds.extend(
                own.iter()
                    .filter_map(|&(e, iv)| super::outside(e, iv, &names, &bounds))
                    .map(|c| format!("({c})")),
            );
            let inner = (!conds.is_empty()).then(|| conds.join(" || "));
            let mut none = Vec::new();
            window_loads(spec, then, ctx, u, inner.as_deref(), out, seen, depth + 1)?
                && window_loads(spec, otherwise, ctx, u, skip, &mut none, seen, depth + 1)?
                && none.is_empty()
        }
        Body::Unary(_, a) | Body::Convert(_, a) => {
            window_loads(spec, a, ctx, u, skip, out, seen, depth + 1)?
        }
        Body::Binary(_, a, c) | Body::Compare(_, a, c) => {
            window_loads(spec, a, ctx, u, skip, out, seen, depth + 1)?
                && window_loads(spec, c, ctx, u, skip, out, seen, depth + 1)?
        }
        Body::Select(p, a, c) => {
            window_loads(spec, p, ctx, u, skip, out, seen, depth + 1)?
                && window_loads(spec, a, ctx, u, skip, out, seen, depth + 1)?
                && window_loads(spec, c, ctx, u, skip, out, seen, depth + 1)?
        }
        _ => false,
    })
}

/// The variable number of `unroll_id` in a loop launch's thread-id map where the launch
/// has `vector` elements a thread (at least 2) in it, its last range variable, and no
/// constraint of the thread moves with it (the thread's own guards are checked once for
/// the whole vector); else None.
fn unrolled_var(launch: &Launch) -> Option<u32> {
    let wm = &launch.write_map;
    if launch.config.vector < 2 || wm.ranges.last().is_none_or(|v| v.name != "unroll_id") {
        return None;
    }
    let u = (wm.dims.len() + wm.ranges.len() - 1) as u32;
    (!wm.constraints.iter().any(|(c, _)| c.uses_var(u))).then_some(u)
}

/// A loop with `vector` elements per thread (`unroll_id`) whose loads and store of 16 bytes
/// are contiguous and aligned ([`vector_base`]): each such operand read in one 128-bit load
/// (`float4`, `int4`, `double2`, ..., `uint4` for 8- and 16-bit types) before the loop over
/// `unroll_id`, which takes its elements from it; the output written in one 128-bit store
/// after it. Returns false, writing nothing, when no operand qualifies (the plain loop
/// follows).
fn vector_loop(
    spec: &KernelSpec,
    launch: &Launch,
    w: &mut BodyWriter,
    params: &str,
) -> Result<bool, MapError> {
    let wm = &launch.write_map;
    let vector = launch.config.vector;
    if unrolled_var(launch).is_none() {
        return Ok(false);
    }
    let wide = |t: ElemType| t.bytes() * vector == 16;
    let mut loads: Vec<(usize, IndexingMap, String)> = Vec::new();
    let mut failed = Vec::new();
    // A straight-line body has its functions written in place (each at each index once)
    // and every load it makes, through any function, is a candidate vector: an operand
    // read both directly and inside a function (a gelu's backward reads its input in
    // three) is then loaded once, as XLA's loop reads it.
    let mut all = Vec::new();
    let root = &spec.functions[0].body;
    let inline = straight_line_loads(spec, root, wm, &mut all, &mut Vec::new(), 0)?;
    let mut at_loads: Vec<(usize, IndexingMap, String)> = Vec::new();
    if inline {
        for (input, at) in all {
            let t = &spec.inputs[input];
            if !wide(t.elem) {
                continue;
            }
            if let Some(base) = vector_base_at(&at, &t.strides()?, vector)? {
                at_loads.push((input, at, base));
            }
        }
    }
    // Loads under a condition (pad's) or at run-time offsets (a gather's, a dynamic
    // slice's) are not hoisted: the condition decides whether they happen at all. The
    // store is the thread's own elements whatever the body reads.
    unconditional_visit(&spec.functions[0].body, &mut |b| {
        if inline {
            return;
        }
        if let Body::Load { input, map } = b {
            if loads.iter().any(|(i, m, _)| i == input && m == map) {
                return;
            }
            let t = &spec.inputs[*input];
            if !wide(t.elem) {
                return;
            }
            match t.strides().and_then(|st| vector_base(wm, map, &st, vector)) {
                Ok(Some(base)) => loads.push((*input, map.clone(), base)),
                Ok(None) => {}
                Err(e) => failed.push(e),
            }
        }
    });
    if let Some(e) = failed.pop() {
        return Err(e);
    }
    let shifted = shifted_vector_loads(spec, wm, vector)?;
    let bases = output_vector_bases(spec, wm, vector)?;
    if loads.is_empty()
        && at_loads.is_empty()
        && shifted.is_empty()
        && bases.iter().all(Option::is_none)
    {
        return Ok(false);
    }
    w.line(format!("// thread → output: {wm}"));
    dim_guards(wm, launch, w, "return");
    guards(wm, w, true);
    let (outer, last) = wm.ranges.split_at(wm.ranges.len() - 1);
    loops_open_vars(outer, w);
    guards(wm, w, false);
    for (k, (input, map, base)) in loads.iter().enumerate() {
        let e = vector_load(w, spec, *input, &format!("v{k}"), base, vector);
        w.replaced.push((*input, map.clone(), e));
    }
    // (one register per input and offset, whichever maps reach it)
    let mut regs: Vec<(usize, String, String)> = Vec::new();
    for (input, at, base) in &at_loads {
        let e = match regs.iter().find(|(i, b, _)| i == input && b == base) {
            Some((_, _, e)) => e.clone(),
            None => {
                let reg = format!("v{}", regs.len());
                let e = vector_load(w, spec, *input, &reg, base, vector);
                regs.push((*input, base.clone(), e.clone()));
                e
            }
        };
        w.replaced_at.push((*input, at.clone(), e));
    }
    for (k, sh) in shifted.iter().enumerate() {
        let t = &spec.inputs[sh.input];
        let vt = vector_type(t.elem);
        let mut at = sh.base.clone();
        for (i, (st, &l)) in sh.starts.iter().zip(&sh.limits).enumerate() {
            if l <= 0 {
                continue; // the start is clamped to 0
            }
            let sv = w.start(st, l, wm, params)?;
            at = format!("{at} + {sv} * {}", sh.strides[i]);
        }
        w.line(format!(
            "// p{} ({}) at run-time starts: {vector} elements of unroll_id in one 128-bit load ({vt})",
            sh.input, t.name
        ));
        w.line(format!(
            "const {vt} vs{k} = *reinterpret_cast<const {vt} *>(p{} + {at});",
            sh.input
        ));
        let elem = format!(
            "reinterpret_cast<const {} *>(&vs{k})[unroll_id]",
            types::mem(t.elem, true)
        );
        w.replaced_dyn
            .push((sh.func, sh.map.clone(), types::load(t.elem, &elem, true)));
    }
    declare_output_vectors(w, spec, &bases);
    loops_open_vars(last, w);
    w.inline_calls = inline;
    let v = w.body(&spec.functions[0].body, wm, params);
    w.inline_calls = false;
    put_output_element(w, spec, wm, &bases, 0, &v?)?;
    // A tuple root's further outputs, in the same loop: into their vectors, or stored.
    for (n, o) in spec.more_outputs.iter().enumerate() {
        let ck = super::more_output_scope(wm, o)?;
        let v = super::function_value(w, o.func, &ck, params)?;
        put_output_element(w, spec, wm, &bases, n + 1, &v)?;
    }
    loops_close_n(1, w);
    store_output_vectors(w, spec, &bases, vector);
    loops_close_n(outer.len(), w);
    Ok(true)
}

/// The tensor, the pointer's name and the vector register's name of output `n` (0 for
/// `out`, `k` for the tuple root's further output `outk`).
fn output_names(spec: &KernelSpec, n: usize) -> (&crate::gpu::spec::Tensor, String, String) {
    match n {
        0 => (&spec.output, "out".into(), "ov".into()),
        _ => (
            &spec.more_outputs[n - 1].tensor,
            format!("out{n}"),
            format!("ov{n}"),
        ),
    }
}

/// Per output of a loop with `vector` elements of `unroll_id` a thread (0 for `out`, then
/// a tuple root's further outputs): the offset of its first element where the elements are
/// one aligned 128-bit store ([`vector_base`]: a variadic reduce-window's argmax indices
/// as well as its maximum), else None (written one element at a time in the loop).
fn output_vector_bases(
    spec: &KernelSpec,
    wm: &IndexingMap,
    vector: i64,
) -> Result<Vec<Option<String>>, MapError> {
    let wide = |t: ElemType| t.bytes() * vector == 16;
    let out = &spec.output;
    let mut bases = vec![if wide(out.elem) {
        vector_base(
            wm,
            &IndexingMap::identity(&out.dims),
            &out.strides()?,
            vector,
        )?
    } else {
        None
    }];
    for o in &spec.more_outputs {
        bases.push(if wide(o.tensor.elem) && !o.is_side_of_reduction() {
            vector_base(wm, &o.map, &o.tensor.strides()?, vector)?
        } else {
            None
        });
    }
    Ok(bases)
}

/// The vector registers (`ov`, `ov1`, ..) of the outputs stored as vectors.
fn declare_output_vectors(w: &mut BodyWriter, spec: &KernelSpec, bases: &[Option<String>]) {
    for (n, b) in bases.iter().enumerate() {
        if b.is_some() {
            let (t, _, reg) = output_names(spec, n);
            w.line(format!("{} {reg};", vector_type(t.elem)));
        }
    }
}

/// Output `n`'s element of `unroll_id`, of value `v`: into the output's vector register, or
/// stored at its offset.
fn put_output_element(
    w: &mut BodyWriter,
    spec: &KernelSpec,
    wm: &IndexingMap,
    bases: &[Option<String>],
    n: usize,
    v: &str,
) -> Result<(), MapError> {
    let (t, ptr, reg) = output_names(spec, n);
    let stored = types::store(t.elem, v, true);
    if bases.get(n).is_some_and(Option::is_some) {
        w.line(format!(
            "reinterpret_cast<{} *>(&{reg})[unroll_id] = {stored};",
            types::mem(t.elem, true)
        ));
        return Ok(());
    }
    let ctx = match n {
        0 => wm.clone(),
        _ => super::more_output_scope(wm, &spec.more_outputs[n - 1])?,
    };
    let k = w.offset(&ctx, &IndexingMap::identity(&t.dims), &t.strides()?, &ptr)?;
    w.line(format!("{ptr}[{k}] = {stored};"));
    Ok(())
}

/// After the loop over `unroll_id`: each output's vector register in one 128-bit store.
fn store_output_vectors(
    w: &mut BodyWriter,
    spec: &KernelSpec,
    bases: &[Option<String>],
    vector: i64,
) {
    for (n, b) in bases.iter().enumerate() {
        let Some(base) = b else { continue };
        let (t, ptr, reg) = output_names(spec, n);
        let vt = vector_type(t.elem);
        w.line(format!(
            "// {ptr}: {vector} elements in one 128-bit store ({vt})"
        ));
        w.line(format!(
            "*reinterpret_cast<{vt} *>({ptr} + {base}) = {reg};"
        ));
    }
}

/// A window reduction (a `reduce-window`, or a `reduce`, at the root of a loop kernel with
/// `vector` elements per thread) folded for all elements of `unroll_id` together, with the
/// window loop outside the loop over `unroll_id`: each window position's `vector` elements
/// of an operand are contiguous and aligned ([`vector_base`] at every window position), so
/// they come in one 128-bit load per position instead of one load per element. XLA's loop
/// emitter writes the elements of `unroll_id` one after the other and LLVM, which knows its
/// buffers' alignment, merges their loads into vectors; NVRTC does not know ours, so ixmap
/// writes the vector itself. Each element of `unroll_id` keeps its accumulators (registers,
/// the arrays being indexed only in unrolled loops) and folds the window in the same order
/// as the element-at-a-time loop: the values are the same.
///
/// Taken where the root is the fold, every further output is the same variadic fold's
/// accumulator at the same index (a reduce-window's argmax), every function the fold reads
/// is straight-line or guarded by conditions that do not move with `unroll_id` (a `pad`
/// of the spatial dimensions: the vector is loaded where it lies inside the operand,
/// [`window_loads`]), no constraint of the window moves with `unroll_id` (a window along
/// the vector's dimension is left to [`vector_loop`]), and at least one operand comes in
/// vectors; else returns false, writing nothing.
fn window_loop(
    spec: &KernelSpec,
    launch: &Launch,
    w: &mut BodyWriter,
    params: &str,
) -> Result<bool, MapError> {
    let wm = &launch.write_map;
    let vector = launch.config.vector;
    let Some(u) = unrolled_var(launch) else {
        return Ok(false);
    };
    let root = &spec.functions[0].body;
    let t = spec.elem_of(0, root);
    // The fold as a variadic one: a plain reduction is one accumulator folded by its op.
    let (inits, funcs, map, reducer, which) = match root {
        Body::ReduceTuple {
            inits,
            funcs,
            map,
            reducer,
            which,
            ..
        } => (inits.clone(), funcs.clone(), map, reducer.clone(), *which),
        Body::Reduce {
            op,
            init,
            func,
            map,
        } if spec.more_outputs.is_empty() => (
            vec![Body::Const(*init)],
            vec![*func],
            map,
            vec![Body::Binary(
                *op,
                Box::new(Body::Param(0, t)),
                Box::new(Body::Param(1, t)),
            )],
            0,
        ),
        _ => return Ok(false),
    };
    let n = funcs.len();
    if inits.len() != n || reducer.len() != n || which >= n || !inits.iter().all(super::index_free)
    {
        return Ok(false);
    }
    // Each further output: accumulator `k` of the same fold, at output 0's index.
    let mut more_which = Vec::new();
    for o in &spec.more_outputs {
        if o.is_side_of_reduction() || !is_identity(&o.map, &spec.output.dims) {
            return Ok(false);
        }
        match spec.functions.get(o.func).map(|f| &f.body) {
            Some(Body::ReduceTuple {
                inits: i2,
                funcs: f2,
                map: m2,
                reducer: r2,
                which: k,
                ..
            }) if *i2 == inits
                && *f2 == funcs
                && *r2 == reducer
                && super::same_map(m2, map)
                && *k < n =>
            {
                more_which.push(*k)
            }
            _ => return Ok(false),
        }
    }
    let m = super::substitute(wm, map)?;
    let shown = simplified(&m);
    if shown.status != crate::map::Status::Defined {
        return Ok(false);
    }
    if let Some(pos) = shown.ranges.iter().position(|v| v.name == "unroll_id") {
        let su = (shown.dims.len() + pos) as u32;
        if shown.constraints.iter().any(|(c, _)| c.uses_var(su)) {
            return Ok(false);
        }
    }
    // Every load the fold's functions make, and which of them are whole vectors.
    let mut all = Vec::new();
    let mut seen = Vec::new();
    for &f in &funcs {
        let call = Body::Call {
            func: f,
            map: map.clone(),
        };
        if !window_loads(spec, &call, wm, u, None, &mut all, &mut seen, 0)? {
            return Ok(false);
        }
    }
    let mut at_loads: Vec<(usize, IndexingMap, String, Option<String>)> = Vec::new();
    for (input, at, skip) in all {
        let ti = &spec.inputs[input];
        if ti.elem.bytes() * vector != 16 {
            continue;
        }
        if let Some(base) = vector_base_at(&at, &ti.strides()?, vector)? {
            at_loads.push((input, at, base, skip));
        }
    }
    if at_loads.is_empty() {
        return Ok(false);
    }
    let bases = output_vector_bases(spec, wm, vector)?;
    let elems: Vec<ElemType> = reducer.iter().map(|r| w.elem(r, t)).collect();

    w.line(format!("// thread → output: {wm}"));
    dim_guards(wm, launch, w, "return");
    guards(wm, w, true);
    let (outer, last) = wm.ranges.split_at(wm.ranges.len() - 1);
    loops_open_vars(outer, w);
    guards(wm, w, false);
    let acc = w.fresh("acc");
    w.line(format!(
        "// the window folded for the {vector} elements of unroll_id together ({n} accumulator{} each), the window loop outside",
        if n == 1 { "" } else { "s" }
    ));
    for (k, e) in elems.iter().enumerate() {
        w.line(format!("{} {acc}_{k}[{vector}];", types::reg(*e)));
    }
    loops_open_vars(last, w);
    for (k, init) in inits.iter().enumerate() {
        let x = w.body_t(init, wm, params, elems[k])?;
        w.line(format!("{acc}_{k}[unroll_id] = {x};"));
    }
    loops_close_n(1, w);
    w.line(format!("// reduce ({n} values) over {shown}"));
    // A small window (at most 16 positions) unrolled, so its vectors load together; a
    // larger one left to NVRTC's own choice.
    let window = &m.ranges[wm.ranges.len()..];
    let positions = window.iter().try_fold(1i64, |p, v| {
        v.bounds
            .hi
            .checked_sub(v.bounds.lo)?
            .checked_add(1)?
            .checked_mul(p)
    });
    let unroll = positions.is_some_and(|p| p <= 16);
    for v in window {
        if !super::I32_INDEX.contains_interval(&v.bounds) {
            super::index_width_needs_64();
        }
        if unroll {
            w.line("#pragma unroll");
        }
        w.line(format!(
            "for ({3} {0} = {1}; {0} <= {2}; ++{0}) {{",
            v.name, v.bounds.lo, v.bounds.hi, w.index_ty
        ));
        w.indent += 1;
    }
    let (cn, cb) = (shown.names(), shown.bounds());
    for &(e, iv) in &shown.constraints {
        if let Some(cond) = super::outside(e, iv, &cn, &cb) {
            w.line(format!("if ({cond}) continue;"));
        }
    }
    // (one register per input, offset and condition, whichever maps reach it)
    let replaced = w.replaced_at.len();
    let mut regs: Vec<(usize, String, Option<String>, String)> = Vec::new();
    for (input, at, base, skip) in &at_loads {
        let e = match regs
            .iter()
            .find(|(i, b, c, _)| i == input && b == base && c == skip)
        {
            Some((.., e)) => e.clone(),
            None => {
                let reg = format!("v{}", regs.len());
                let e = vector_load_unless(w, spec, *input, &reg, base, vector, skip.as_deref());
                regs.push((*input, base.clone(), skip.clone(), e.clone()));
                e
            }
        };
        w.replaced_at.push((*input, at.clone(), e));
    }
    loops_open_vars(last, w);
    let inlined = w.inlined.len();
    w.inline_calls = true;
    let mut args: Vec<String> = (0..n).map(|k| format!("{acc}_{k}[unroll_id]")).collect();
    let mut failed = None;
    for &f in &funcs {
        let call = Body::Call {
            func: f,
            map: map.clone(),
        };
        match w.body_t(&call, wm, params, spec.function_elem(f)) {
            Ok(v) => args.push(v),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    w.inline_calls = false;
    if let Some(e) = failed {
        return Err(e);
    }
    // Every new accumulator from the old ones, then all replaced at once.
    let next = w.fold_step(&reducer, &elems, args, wm, params)?;
    for (k, r) in next.iter().enumerate() {
        w.line(format!("{acc}_{k}[unroll_id] = {r};"));
    }
    loops_close_n(1, w);
    w.inlined.truncate(inlined);
    w.replaced_at.truncate(replaced);
    loops_close_n(window.len(), w);
    // The outputs: each element's accumulator, into the output's vector or stored.
    declare_output_vectors(w, spec, &bases);
    loops_open_vars(last, w);
    put_output_element(w, spec, wm, &bases, 0, &format!("{acc}_{which}[unroll_id]"))?;
    for (k, &which) in more_which.iter().enumerate() {
        put_output_element(
            w,
            spec,
            wm,
            &bases,
            k + 1,
            &format!("{acc}_{which}[unroll_id]"),
        )?;
    }
    loops_close_n(1, w);
    store_output_vectors(w, spec, &bases, vector);
    loops_close_n(outer.len(), w);
    Ok(true)
}

/// Writes register `reg`, the `vector` elements of input `input` at offset `base` in one
/// 128-bit load; returns the expression of the element of `unroll_id`.
fn vector_load(
    w: &mut BodyWriter,
    spec: &KernelSpec,
    input: usize,
    reg: &str,
    base: &str,
    vector: i64,
) -> String {
    vector_load_unless(w, spec, input, reg, base, vector, None)
}

/// [`vector_load`], skipped (the register left zero) where C condition `skip` holds: the
/// elements lie outside the operand there, and only a guard's branch that does not read
/// them runs.
fn vector_load_unless(
    w: &mut BodyWriter,
    spec: &KernelSpec,
    input: usize,
    reg: &str,
    base: &str,
    vector: i64,
    skip: Option<&str>,
) -> String {
    let t = &spec.inputs[input];
    let vt = vector_type(t.elem);
    w.line(format!(
        "// p{input} ({}): {vector} elements of unroll_id in one 128-bit load ({vt}){}",
        t.name,
        if skip.is_some() {
            ", where they lie inside it"
        } else {
            ""
        }
    ));
    match skip {
        None => w.line(format!(
            "const {vt} {reg} = *reinterpret_cast<const {vt} *>(p{input} + {base});"
        )),
        Some(c) => {
            w.line(format!("{vt} {reg} = {{}};"));
            w.line(format!(
                "if (!({c})) {reg} = *reinterpret_cast<const {vt} *>(p{input} + {base});"
            ));
        }
    }
    let elem = format!(
        "reinterpret_cast<const {} *>(&{reg})[unroll_id]",
        types::mem(t.elem, true)
    );
    types::load(t.elem, &elem, true)
}

/// An operand read at run-time starts (a gather's or a dynamic slice's [`Body::DynCall`] of
/// a parameter) whose `vector` elements of `unroll_id` are one aligned 128-bit load.
struct ShiftedLoad {
    func: usize,
    map: IndexingMap,
    input: usize,
    starts: Vec<Body>,
    limits: Vec<i64>,
    strides: Vec<i64>,
    /// The element offset without the starts ([`vector_base`]).
    base: String,
}

/// The run-time-shifted reads of the loop body that are whole vectors: the shifted
/// function loads its parameter unchanged (index = coordinate); the unshifted access is a
/// contiguous aligned vector ([`vector_base`]: the thread's elements of `unroll_id` lie
/// together inside the slice, so the slice's clamped start moves all of them alike);
/// each start either is clamped to 0 (the slice spans the dimension) or moves by a stride
/// that is a multiple of `vector` (so the vector stays aligned); and no start depends on
/// `unroll_id` (the starts are read once, before the loop).
fn shifted_vector_loads(
    spec: &KernelSpec,
    wm: &IndexingMap,
    vector: i64,
) -> Result<Vec<ShiftedLoad>, MapError> {
    let u = (wm.dims.len() + wm.ranges.len() - 1) as u32;
    let mut calls: Vec<(usize, IndexingMap, Vec<Body>, Vec<i64>)> = Vec::new();
    unconditional_visit(&spec.functions[0].body, &mut |b| {
        if let Body::DynCall {
            func,
            map,
            starts,
            limits,
        } = b
        {
            if !calls.iter().any(|(f, m, ..)| f == func && m == map) {
                calls.push((*func, map.clone(), starts.clone(), limits.clone()));
            }
        }
    });
    let mut out = Vec::new();
    for (func, map, starts, limits) in calls {
        let Some(f) = spec.functions.get(func) else {
            continue;
        };
        let Body::Load { input, map: fmap } = &f.body else {
            continue;
        };
        let t = &spec.inputs[*input];
        if !is_identity(fmap, &t.dims) || t.elem.bytes() * vector != 16 {
            continue;
        }
        let strides = t.strides()?;
        if starts.len() != limits.len() || limits.len() != strides.len() {
            continue;
        }
        let aligned = limits
            .iter()
            .zip(&strides)
            .all(|(&l, &st)| l <= 0 || st.rem_euclid(vector) == 0);
        // Starts read from loads at maps that do not move with unroll_id, or constants.
        let mut fixed = true;
        for st in &starts {
            let mut ok = true;
            let mut check = |b: &Body| match b {
                Body::Const(_) | Body::Convert(..) => {}
                Body::Load { map, .. } => match super::substitute(wm, map) {
                    Ok(m) => ok &= !m.results.iter().any(|r| r.uses_var(u)),
                    Err(_) => ok = false,
                },
                _ => ok = false,
            };
            st.visit(&mut check);
            fixed &= ok;
        }
        if !aligned || !fixed {
            continue;
        }
        let Some(base) = vector_base(wm, &map, &strides, vector)? else {
            continue;
        };
        out.push(ShiftedLoad {
            func,
            map,
            input: *input,
            starts,
            limits,
            strides,
            base,
        });
    }
    Ok(out)
}

/// The index of the reduced element a reduction's thread reads, as C arguments of its
/// function: from the simplified scope, or the scope as it is for the naive variant (or
/// where simplification leaves it undefined).
fn reduced_args(ctx: &IndexingMap, naive: bool) -> Vec<String> {
    let s = simplified(ctx);
    let m = if naive || s.status != crate::map::Status::Defined {
        ctx.clone()
    } else {
        s
    };
    m.results
        .iter()
        .map(|&r| c_expr(r, &m.names(), &m.bounds()))
        .collect()
}

/// [`Body::visit`] without going under a condition or a run-time shift ([`Body::Guard`],
/// [`Body::DynCall`]): the operations every element performs.
fn unconditional_visit(b: &Body, f: &mut dyn FnMut(&Body)) {
    match b {
        Body::Guard { .. } | Body::DynCall { .. } => f(b),
        Body::Unary(_, a) | Body::Convert(_, a) => {
            f(b);
            unconditional_visit(a, f);
        }
        Body::Binary(_, a, c) | Body::Compare(_, a, c) => {
            f(b);
            unconditional_visit(a, f);
            unconditional_visit(c, f);
        }
        // A select evaluates both sides (no side effects, every load in bounds).
        Body::Select(c, x, y) => {
            f(b);
            unconditional_visit(c, f);
            unconditional_visit(x, f);
            unconditional_visit(y, f);
        }
        _ => b.visit(f),
    }
}

/// The kernel, with 32-bit index arithmetic (`int`) when every index expression it writes
/// stays inside `int` over its variables' bounds (as XLA does), else 64-bit (`int64_t`).
pub fn emit(spec: &KernelSpec, launch: &Launch, naive: bool) -> Result<Emitted, MapError> {
    emit_width(spec, launch, naive, false).map(|(e, _)| e)
}

/// The kernel and the width of its index arithmetic (32 or 64 bits); `wide` asks for 64
/// bits even where 32 would do (to test that form on small shapes).
pub fn emit_width(
    spec: &KernelSpec,
    launch: &Launch,
    naive: bool,
    wide: bool,
) -> Result<(Emitted, u32), MapError> {
    super::index_width_reset();
    let ids_fit = launch
        .grid
        .iter()
        .chain(&launch.block)
        .all(|&n| n - 1 <= super::I32_INDEX.hi);
    if ids_fit && !wide {
        let e = emit_with(spec, launch, naive, "int")?;
        if super::index_width_fits_32() {
            return Ok((e, 32));
        }
    }
    Ok((emit_with(spec, launch, naive, "int64_t")?, 64))
}

fn emit_with(
    spec: &KernelSpec,
    launch: &Launch,
    naive: bool,
    index_ty: &'static str,
) -> Result<Emitted, MapError> {
    super::refuse_empty(spec)?;
    let mut name = c_ident(&spec.name);
    // Names cuda_fp16.h and cuda_bf16.h declare.
    if ["half", "half2", "nv_bfloat16", "nv_bfloat162"].contains(&name.as_str()) {
        name += "_kernel";
    }
    let out_elem = spec.output.elem;
    let mut src = format!(
        "// {} for CUDA: {} = {}, {} mapping, block {}, grid {}; index arithmetic {}, {}.\n",
        spec.name,
        spec.output.name,
        spec.output.shape_text(),
        launch.strategy.name(),
        launch.block[0],
        if launch.grid[1] > 1 {
            format!("{} x {}", launch.grid[0], launch.grid[1])
        } else {
            launch.grid[0].to_string()
        },
        if naive {
            "naive"
        } else {
            "from the simplified maps"
        },
        if index_ty == "int" {
            "32-bit (every index fits)"
        } else {
            "64-bit"
        }
    );
    // NVRTC has no system headers: the integer types are declared here.
    src += "typedef long long int64_t;\ntypedef int int32_t;\n\n";
    let mut funcs = String::new();
    // A kernel whose row computes the body's reductions together inlines every function.
    let rows = super::cuda_rows::plan(spec, launch)?;
    for f in helper_functions(
        spec,
        naive,
        "__device__ static ",
        "__restrict__",
        false,
        index_ty,
    )?
    .into_iter()
    .filter(|_| !rows)
    {
        funcs += &f;
        funcs += "\n";
    }
    let prelude_at = src.len();
    src += &funcs;
    let params: String = (0..spec.inputs.len())
        .map(|k| format!("p{k}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut w = BodyWriter::new(spec, naive, 1);
    w.index_ty = index_ty;
    w.cuda = true;
    let wm = &launch.write_map;
    let out_strides = spec.output.strides()?;
    let out_id = IndexingMap::identity(&spec.output.dims);
    match &launch.strategy {
        _ if rows => super::cuda_rows::emit(spec, launch, naive, &mut w, &params)?,
        Strategy::RowNormalization => {
            return Err(MapError::Other(format!(
                "{}: a row normalization needs an elementwise root reading reductions of its rows",
                spec.name
            )))
        }
        Strategy::Loop
            if !naive
                && (window_loop(spec, launch, &mut w, &params)?
                    || vector_loop(spec, launch, &mut w, &params)?) => {}
        Strategy::Loop => {
            w.line(format!("// thread → output: {wm}"));
            dim_guards(wm, launch, &mut w, "return");
            guards(wm, &mut w, true);
            loops_open(wm, &mut w);
            guards(wm, &mut w, false);
            let ctx = scope(&mut w, wm, naive, "o");
            let v = w.body(&spec.functions[0].body, &ctx, &params)?;
            let k = w.offset(&ctx, &out_id, &out_strides, "out")?;
            w.line(format!("out[{k}] = {};", types::store(out_elem, &v, true)));
            store_more_outputs(&mut w, &ctx, &params)?;
            loops_close(wm, &mut w);
        }
        Strategy::Concatenate | Strategy::DynamicUpdateSlice | Strategy::Scatter => {
            // One loop per part (an operand of the concatenate, or the update), each in a
            // `do { } while (0)` that a thread whose ids lie outside the part leaves.
            for l in super::dus_starts(spec, index_ty) {
                w.line(l);
            }
            for (n, p) in launch.parts.iter().enumerate() {
                let (rm, pw) = (&p.read, &p.write);
                w.line(format!(
                    "// part {n} (f{}): thread → its index: {rm}",
                    p.func
                ));
                w.line("do {");
                w.indent += 1;
                dim_guards(rm, launch, &mut w, "break");
                guards_with(rm, &mut w, true, "break");
                loops_open(rm, &mut w);
                guards(rm, &mut w, false);
                let ctx = scope(&mut w, rm, naive, "o");
                let v = super::function_value(&mut w, p.func, &ctx, &params)?;
                if let crate::gpu::spec::Root::Scatter { op, .. } = &spec.root {
                    super::scatter_starts(&mut w, &ctx)?;
                    let k = super::store_offset(&mut w, pw, &out_strides, "thread → out")?;
                    w.line(super::combine_store(
                        *op,
                        spec.output.elem,
                        &format!("out[{k}]"),
                        &v,
                        true,
                    ));
                } else {
                    let k = super::store_offset(&mut w, pw, &out_strides, "thread → out")?;
                    w.line(format!("out[{k}] = {};", types::store(out_elem, &v, true)));
                }
                loops_close(rm, &mut w);
                w.indent -= 1;
                w.line("} while (0);");
            }
        }
        Strategy::TiledTranspose { .. } => {
            // Phase 1: the transposed loads of the root, read along the input's rows.
            let rm = &launch.read_map;
            let mut tiled: Vec<(usize, IndexingMap)> = Vec::new();
            spec.functions[0].body.visit(&mut |b| {
                if let Body::Load { input, map } = b {
                    let acc = crate::gpu::spec::InputAccess {
                        input: *input,
                        map: map.clone(),
                    };
                    if reads_through_tile(spec, launch, &acc)
                        && !tiled.iter().any(|(i, m)| i == input && m == map)
                    {
                        tiled.push((*input, map.clone()));
                    }
                }
            });
            for (k, (input, _)) in tiled.iter().enumerate() {
                // The tile holds loaded values (16-bit floats as float).
                let ty = types::reg(spec.inputs[*input].elem);
                w.line(format!("__shared__ {ty} tile{k}[{TILE}][{}];", TILE + 1));
            }
            w.line(format!(
                "// phase 1, thread → tile read (output coordinates): {rm}"
            ));
            w.line("{");
            w.indent += 1;
            loops_open(rm, &mut w);
            dim_guards(rm, launch, &mut w, "continue");
            guards(rm, &mut w, false);
            guards_with(rm, &mut w, true, "continue");
            let ctx = scope(&mut w, rm, naive, "o");
            for (k, (input, map)) in tiled.iter().enumerate() {
                let v = w.body(
                    &Body::Load {
                        input: *input,
                        map: map.clone(),
                    },
                    &ctx,
                    &params,
                )?;
                w.line(format!(
                    "tile{k}[th_x % {TILE}][th_x / {TILE} + row * 4] = {v};"
                ));
            }
            // Side outputs in the transposed operand's shape: written here, in its layout.
            let writes = crate::gpu::launch::more_output_writes(spec, launch)?;
            store_more_outputs_where(&mut w, &ctx, &params, &|n| writes[n].while_reading)?;
            loops_close(rm, &mut w);
            w.indent -= 1;
            w.line("}");
            w.line("__syncthreads();");
            for (k, (input, map)) in tiled.iter().enumerate() {
                w.replaced.push((
                    *input,
                    map.clone(),
                    format!("tile{k}[th_x / {TILE} + row * 4][th_x % {TILE}]"),
                ));
            }
            w.line(format!("// phase 2, thread → output: {wm}"));
            loops_open(wm, &mut w);
            dim_guards(wm, launch, &mut w, "continue");
            guards(wm, &mut w, false);
            guards_with(wm, &mut w, true, "continue");
            let ctx = scope(&mut w, wm, naive, "o");
            let v = w.body(&spec.functions[0].body, &ctx, &params)?;
            let k = w.offset(&ctx, &out_id, &out_strides, "out")?;
            w.line(format!("out[{k}] = {};", types::store(out_elem, &v, true)));
            let writes = crate::gpu::launch::more_output_writes(spec, launch)?;
            store_more_outputs_where(&mut w, &ctx, &params, &|n| !writes[n].while_reading)?;
            loops_close(wm, &mut w);
        }
        Strategy::RowReduction | Strategy::ColumnReduction if !spec.more_outputs.is_empty() => {
            multi_reduction(spec, launch, &mut w, &params, naive)?;
        }
        Strategy::RowReduction | Strategy::ColumnReduction => {
            if !spec.more_outputs.is_empty() {
                return Err(MapError::Other(format!(
                    "{}: multi-output reductions are not emitted",
                    spec.name
                )));
            }
            // The root is the reduction, or its conversion to the output type (a sum in
            // f32 of f16 values, written as f16).
            let (root, convert_to) = match spec.functions.first().map(|f| &f.body) {
                Some(Body::Convert(to, r)) => (Some(&**r), Some(*to)),
                r => (r, None),
            };
            let Some(Body::Reduce { op, init, func, .. }) = root else {
                return Err(MapError::Other(
                    "a reduction launch needs a reduction at the root".into(),
                ));
            };
            let red_elem = spec.function_elem(*func);
            let ty = types::reg(red_elem);
            let rm = &launch.read_map;
            let acc_init = types::constant(*init, red_elem);
            // A vectorized column reduction keeps one accumulator per adjacent column
            // (`acc[unroll_id]`), a register each once the loops are unrolled.
            let nv = column_vector(launch);
            let acc_at = |i: &str| {
                if nv > 1 {
                    format!("acc[{i}]")
                } else {
                    "acc".to_string()
                }
            };
            if nv > 1 {
                w.line(format!("{ty} acc[{nv}];"));
                w.line("#pragma unroll");
                w.line(format!(
                    "for (int k = 0; k < {nv}; ++k) acc[k] = {acc_init};"
                ));
            } else {
                w.line(format!("{ty} acc = {acc_init};"));
            }
            w.line(format!("// thread → reduced element: {rm}"));
            // Guards on the dims alone hold for the whole warp's row: they may `return` only
            // after the shuffle, so keep them as a flag.
            // Without a loop over the reduced elements, a guard's `continue` needs a loop to
            // leave: one pass of `do { } while (0)` skips this thread's contribution, and the
            // thread still takes part in the warp's shuffle below.
            let one_pass = rm.ranges.is_empty();
            let vector_read = if naive {
                None
            } else {
                row_vector_read(spec, launch, *func)?
            };
            if let Some((input, vt, base)) = &vector_read {
                // The row's steps, each one vector read; then its elements.
                let (outer, last) = rm.ranges.split_at(rm.ranges.len() - 1);
                // A guard's `continue` needs a loop to leave: without one over the row's
                // steps, one pass of `do { } while (0)`.
                if outer.is_empty() {
                    w.line("do {");
                    w.indent += 1;
                }
                loops_open_vars(outer, &mut w);
                dim_guards(rm, launch, &mut w, "continue");
                // Guards that move with unroll_id hold for all of the vector or none.
                let u = (rm.dims.len() + rm.ranges.len() - 1) as u32;
                for &(e, iv) in &rm.constraints {
                    let at_first = e.substitute(&mut |v| {
                        if v == u {
                            Expr::constant(0)
                        } else {
                            Expr::var(v)
                        }
                    });
                    if let Some(cond) = super::outside(at_first, iv, &rm.names(), &rm.bounds()) {
                        w.line(format!("if ({cond}) continue;"));
                    }
                }
                let t = spec.inputs[*input].elem;
                w.line(format!(
                    "// p{input}: {} elements of unroll_id in one {}-bit load ({vt})",
                    launch.config.vector,
                    t.bytes() * launch.config.vector * 8
                ));
                w.line(format!(
                    "const {vt} v = *reinterpret_cast<const {vt} *>(p{input} + {base});"
                ));
                loops_open_vars(last, &mut w);
                let elem = types::load(
                    t,
                    &format!(
                        "reinterpret_cast<const {} *>(&v)[unroll_id]",
                        types::mem(t, true)
                    ),
                    true,
                );
                w.line(format!(
                    "acc = {};",
                    types::binary(*op, red_elem, "acc", &elem)
                ));
                loops_close_n(rm.ranges.len(), &mut w);
                if outer.is_empty() {
                    w.indent -= 1;
                    w.line("} while (0);");
                }
            } else {
                if one_pass {
                    w.line("do {");
                    w.indent += 1;
                }
                loops_open(rm, &mut w);
                dim_guards(rm, launch, &mut w, "continue");
                for &(e, iv) in &rm.constraints {
                    if let Some(cond) = super::outside(e, iv, &rm.names(), &rm.bounds()) {
                        w.line(format!("if ({cond}) continue;"));
                    }
                }
                let ctx = scope(&mut w, rm, naive, "r");
                let args = reduced_args(&ctx, naive);
                let call = format!(
                    "f{func}({params}{}{})",
                    if args.is_empty() { "" } else { ", " },
                    args.join(", ")
                );
                let a = acc_at("unroll_id");
                w.line(format!(
                    "{a} = {};",
                    types::binary(*op, red_elem, &a, &call)
                ));
                loops_close(rm, &mut w);
                if one_pass {
                    w.indent -= 1;
                    w.line("} while (0);");
                }
            }
            if launch.strategy == Strategy::ColumnReduction {
                column_transpose(&mut w, &ty, "tile", "acc", nv);
            }
            if launch.row_threads > 1 {
                // A tree over the row's lanes: lane 0 of each group of `row_threads` ends
                // with the sum of its group (several rows per warp when rows are short; a
                // warp's part of the row when the row has several warps).
                w.line(format!(
                    "for (int off = {}; off > 0; off /= 2) {{",
                    launch.row_threads.min(32) / 2
                ));
                let (a, pad) = if nv > 1 {
                    w.line("  #pragma unroll");
                    w.line(format!("  for (int k = 0; k < {nv}; ++k) {{"));
                    ("acc[k]".to_string(), "    ")
                } else {
                    ("acc".to_string(), "  ")
                };
                w.line(format!(
                    "{pad}const {ty} other = __shfl_down_sync(0xffffffffu, {a}, off);"
                ));
                w.line(format!(
                    "{pad}{a} = {};",
                    types::binary(*op, red_elem, &a, "other")
                ));
                if nv > 1 {
                    w.line("  }");
                }
                w.line("}");
            }
            if launch.row_threads > 32 && nv == 1 {
                // XLA's rows of several warps: each warp's lane 0 leaves its value in shared
                // memory, and the row's first thread folds its warps' values in order.
                let warps = launch.block[0] / 32;
                let per_row = launch.row_threads / 32;
                w.line(format!(
                    "// the row's {per_row} warps: lane 0 of each leaves its warp's value in shared memory, the row's first lane folds them in order"
                ));
                w.line(format!("__shared__ {ty} warp_acc[{warps}];"));
                w.line("if (th_x % 32 == 0) warp_acc[th_x / 32] = acc;");
                w.line("__syncthreads();");
                w.line(format!("if (th_x % {} == 0) {{", launch.row_threads));
                w.line(format!("  for (int k = 1; k < {per_row}; ++k) {{"));
                w.line(format!(
                    "    acc = {};",
                    types::binary(*op, red_elem, "acc", "warp_acc[th_x / 32 + k]")
                ));
                w.line("  }");
                w.line("}");
            }
            w.line(format!("// thread → output: {wm}"));
            dim_guards(wm, launch, &mut w, "return");
            guards(wm, &mut w, true);
            loops_open(wm, &mut w);
            guards_with(wm, &mut w, false, "continue");
            let ctx = scope(&mut w, wm, naive, "o");
            let k = w.offset(&ctx, &out_id, &out_strides, "out")?;
            let a = acc_at("unroll_id");
            let v = match convert_to {
                Some(to) => types::convert(red_elem, to, &a),
                None => a,
            };
            w.line(format!("out[{k}] = {};", types::store(out_elem, &v, true)));
            loops_close(wm, &mut w);
        }
    }
    let mut decl = input_params(spec, "__restrict__");
    decl.extend(super::output_params(spec, "__restrict__"));
    src += &format!(
        "extern \"C\" __global__ void __launch_bounds__({}) {name}({}) {{\n",
        launch.block[0],
        decl.join(", ")
    );
    let mut body = ids(index_ty);
    body.append(&mut w.lines);
    for l in assume_ids(
        super::drop_rounding_before_stores(prune_unused(body), super::CUDA_STORES),
        launch,
    ) {
        src += &l;
        src += "\n";
    }
    src += "}\n";
    let mut prelude = String::new();
    if src.contains("INFINITY") || src.contains("NAN") {
        prelude += SPECIALS;
    }
    prelude += &super::used_helpers(&src).replace("static inline", "__device__ static inline");
    prelude += &types::helpers(&src, true);
    if !prelude.is_empty() {
        prelude += "\n";
    }
    src.insert_str(prelude_at, &prelude);
    // The 16-bit float types' headers (found by NVRTC with --include-path, see nvcc.rs),
    // and the integer types the kernel names beyond int32_t and int64_t.
    let mut head = String::new();
    if src.contains("__half") || src.contains("half_rn") {
        head += "#include <cuda_fp16.h>\n";
    }
    if src.contains("bfloat16") {
        head += "#include <cuda_bf16.h>\n";
    }
    for (t, def) in [
        ("int8_t", "signed char"),
        ("int16_t", "short"),
        ("uint8_t", "unsigned char"),
        ("uint16_t", "unsigned short"),
        ("uint32_t", "unsigned int"),
        ("uint64_t", "unsigned long long"),
    ] {
        if super::mentions_word(&src, t) {
            head += &format!("typedef {def} {t};\n");
        }
    }
    if !head.is_empty() {
        let at = src.find("typedef long long int64_t;").unwrap_or(0);
        src.insert_str(at, &head);
    }
    // Functions a vector load or a multi-output kernel's own accumulation made unused.
    src = super::drop_unreferenced(src, "__device__ static ");
    Ok(Emitted {
        name: spec.name.clone(),
        target: Target::Cuda,
        source: src,
        entry: name,
    })
}

/// One reduction of a multi-output reduction fusion: the output it writes (0 for `out`),
/// its op, init, reduced function, and the type it is converted to when written.
struct Reduction {
    output: usize,
    op: crate::gpu::spec::BinOp,
    init: f64,
    func: usize,
    convert_to: Option<ElemType>,
}

fn reduction_of(output: usize, body: &Body) -> Option<Reduction> {
    let (b, convert_to) = match body {
        Body::Convert(to, r) => (&**r, Some(*to)),
        b => (b, None),
    };
    match b {
        Body::Reduce { op, init, func, .. } => Some(Reduction {
            output,
            op: *op,
            init: *init,
            func: *func,
            convert_to,
        }),
        _ => None,
    }
}

/// A multi-output reduction fusion (XLA's reduction emitter with several roots): per
/// reduction group (`if (bl_y == g)`, a row of blocks each), one pass over the reduced
/// elements accumulating every reduction of the group (`acc0`, `acc1`, ..: their operands
/// are read at the same element) and writing the side outputs there, then each
/// accumulator reduced across the lanes of its row (column reductions: through its own
/// 32×33 tile first) and written with the group's outputs of the reduced shape.
fn multi_reduction(
    spec: &KernelSpec,
    launch: &Launch,
    w: &mut BodyWriter,
    params: &str,
    naive: bool,
) -> Result<(), MapError> {
    let writes = crate::gpu::launch::more_output_writes(spec, launch)?;
    let groups = spec.groups();
    let mut reductions: Vec<(usize, Reduction)> = Vec::new();
    let first = reduction_of(0, &spec.functions[0].body).ok_or_else(|| {
        MapError::Other("a reduction launch needs a reduction at the root".into())
    })?;
    reductions.push((0, first));
    for (n, o) in spec.more_outputs.iter().enumerate() {
        if let Some(r) = reduction_of(n + 1, &spec.functions[o.func].body) {
            reductions.push((o.group, r));
        }
    }
    // The maps with `bl_y` over the whole grid: the group is chosen by the `if` around it.
    let all_groups = |m: &IndexingMap| {
        let mut m = m.clone();
        if let Some(v) = m.dims.get_mut(4) {
            v.bounds = crate::interval::Interval::new(0, groups as i64 - 1);
        }
        m
    };
    let rm = all_groups(&launch.read_map);
    let wm = all_groups(&launch.write_map);
    for g in 0..groups {
        if groups > 1 {
            w.line(format!("if (bl_y == {g}) {{"));
            w.indent += 1;
            w.line(format!("// reduction group {g}"));
        }
        let mine: Vec<&Reduction> = reductions
            .iter()
            .filter(|(rg, _)| *rg == g)
            .map(|(_, r)| r)
            .collect();
        let nv = column_vector(launch);
        let acc_of = |output: usize, i: &str| {
            if nv > 1 {
                format!("acc{output}[{i}]")
            } else {
                format!("acc{output}")
            }
        };
        for r in &mine {
            let e = spec.function_elem(r.func);
            if nv > 1 {
                w.line(format!("{} acc{}[{nv}];", types::reg(e), r.output));
                w.line("#pragma unroll");
                w.line(format!(
                    "for (int k = 0; k < {nv}; ++k) acc{}[k] = {};",
                    r.output,
                    types::constant(r.init, e)
                ));
            } else {
                w.line(format!(
                    "{} acc{} = {};",
                    types::reg(e),
                    r.output,
                    types::constant(r.init, e)
                ));
            }
        }
        w.line(format!("// thread → reduced element: {rm}"));
        let one_pass = rm.ranges.is_empty();
        if one_pass {
            w.line("do {");
            w.indent += 1;
        }
        loops_open(&rm, w);
        dim_guards(&rm, launch, w, "continue");
        for &(e, iv) in &rm.constraints {
            if let Some(cond) = super::outside(e, iv, &rm.names(), &rm.bounds()) {
                w.line(format!("if ({cond}) continue;"));
            }
        }
        let ctx = scope(w, &rm, naive, "r");
        let args = reduced_args(&ctx, naive);
        // Each reduced function once per element, however many reductions fold it.
        let mut values: Vec<(usize, String)> = Vec::new();
        for r in &mine {
            if !values.iter().any(|(f, _)| *f == r.func) {
                let v = format!("v{}", r.func);
                let ty = types::reg(spec.function_elem(r.func));
                w.line(format!(
                    "const {ty} {v} = f{}({params}{}{});",
                    r.func,
                    if args.is_empty() { "" } else { ", " },
                    args.join(", ")
                ));
                values.push((r.func, v));
            }
            let v = &values.iter().find(|(f, _)| *f == r.func).expect("pushed").1;
            let acc = acc_of(r.output, "unroll_id");
            w.line(format!(
                "{acc} = {};",
                types::binary(r.op, spec.function_elem(r.func), &acc, v)
            ));
        }
        // Side outputs: the element just read, written once by the thread that reads it.
        // (The read scope is the reduced operand's index: the side output's own.)
        for (n, wr) in writes.iter().enumerate() {
            if !(wr.while_reading && wr.group == g) {
                continue;
            }
            let o = &spec.more_outputs[n];
            match values.iter().find(|(f, _)| *f == o.func) {
                // The value a reduction just read (the reduced function itself).
                Some((_, v)) => {
                    let t = &o.tensor;
                    let name = format!("out{}", n + 1);
                    let k =
                        w.offset(&ctx, &IndexingMap::identity(&t.dims), &t.strides()?, &name)?;
                    w.line(format!("{name}[{k}] = {};", types::store(t.elem, v, true)));
                }
                None => super::store_more_output(w, n, &ctx, params)?,
            }
        }
        loops_close(&rm, w);
        if one_pass {
            w.indent -= 1;
            w.line("} while (0);");
        }
        for r in &mine {
            let ty = types::reg(spec.function_elem(r.func));
            let acc = format!("acc{}", r.output);
            if launch.strategy == Strategy::ColumnReduction {
                column_transpose(w, &ty, &format!("tile{}", r.output), &acc, nv);
            }
            if launch.row_threads > 1 {
                w.line(format!(
                    "for (int off = {}; off > 0; off /= 2) {{",
                    launch.row_threads / 2
                ));
                let (a, pad) = if nv > 1 {
                    w.line("  #pragma unroll");
                    w.line(format!("  for (int k = 0; k < {nv}; ++k) {{"));
                    (acc_of(r.output, "k"), "    ")
                } else {
                    (acc.clone(), "  ")
                };
                w.line(format!(
                    "{pad}const {ty} other = __shfl_down_sync(0xffffffffu, {a}, off);"
                ));
                w.line(format!(
                    "{pad}{a} = {};",
                    types::binary(r.op, spec.function_elem(r.func), &a, "other")
                ));
                if nv > 1 {
                    w.line("  }");
                }
                w.line("}");
            }
        }
        let writes_here =
            !mine.is_empty() || writes.iter().any(|wr| wr.group == g && !wr.while_reading);
        if !writes_here {
            // A group of side outputs alone: nothing is written per output element.
            if groups > 1 {
                w.indent -= 1;
                w.line("}");
            }
            continue;
        }
        w.line(format!("// thread → output: {wm}"));
        dim_guards(&wm, launch, w, "return");
        guards(&wm, w, true);
        loops_open(&wm, w);
        guards_with(&wm, w, false, "continue");
        let ctx = scope(w, &wm, naive, "o");
        for r in &mine {
            let t = spec.outputs()[r.output];
            let (name, strides) = if r.output == 0 {
                ("out".to_string(), t.strides()?)
            } else {
                (format!("out{}", r.output), t.strides()?)
            };
            let k = w.offset(&ctx, &IndexingMap::identity(&t.dims), &strides, &name)?;
            let acc = acc_of(r.output, "unroll_id");
            let v = match r.convert_to {
                Some(to) => types::convert(spec.function_elem(r.func), to, &acc),
                None => acc,
            };
            w.line(format!("{name}[{k}] = {};", types::store(t.elem, &v, true)));
        }
        // Outputs of the reduced shape that are not reductions, written by the same lanes.
        for (n, (o, wr)) in spec.more_outputs.iter().zip(&writes).enumerate() {
            let is_reduction = reductions.iter().any(|(_, r)| r.output == n + 1);
            if wr.group == g && !wr.while_reading && !is_reduction {
                let ck = super::more_output_scope(&ctx, o)?;
                super::store_more_output(w, n, &ck, params)?;
            }
        }
        loops_close(&wm, w);
        if groups > 1 {
            w.indent -= 1;
            w.line("}");
        }
    }
    Ok(())
}

/// The adjacent columns each thread of a column reduction reads (`vector`), 1 for the
/// other strategies.
fn column_vector(launch: &Launch) -> i64 {
    if launch.strategy == Strategy::ColumnReduction {
        launch.config.vector.max(1)
    } else {
        1
    }
}

/// A column reduction's 32×32 partial sums (per adjacent column when `nv > 1`),
/// transposed through shared memory (33 columns: the column read hits 32 banks): warp w
/// then holds the 32 partial sums of its columns, one per lane.
fn column_transpose(w: &mut BodyWriter, ty: &str, tile: &str, acc: &str, nv: i64) {
    if nv > 1 {
        w.line(format!(
            "__shared__ {ty} {tile}[{nv}][{TILE}][{}];",
            TILE + 1
        ));
        w.line("#pragma unroll");
        w.line(format!(
            "for (int k = 0; k < {nv}; ++k) {tile}[k][th_x / {TILE}][th_x % {TILE}] = {acc}[k];"
        ));
        w.line("__syncthreads();");
        w.line("#pragma unroll");
        w.line(format!(
            "for (int k = 0; k < {nv}; ++k) {acc}[k] = {tile}[k][th_x % {TILE}][th_x / {TILE}];"
        ));
    } else {
        w.line(format!("__shared__ {ty} {tile}[{TILE}][{}];", TILE + 1));
        w.line(format!("{tile}[th_x / {TILE}][th_x % {TILE}] = {acc};"));
        w.line("__syncthreads();");
        w.line(format!("{acc} = {tile}[th_x % {TILE}][th_x / {TILE}];"));
    }
}
