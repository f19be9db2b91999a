//! C for the host compiler: the entry point loops over the output in its physical order
//! (`i`), so the loop index is the output offset and, for an elementwise chain through
//! reshapes, the simplified input offsets are `i` as well: the compiler then vectorizes the
//! loop. The outer loop is split across threads by OpenMP (`#pragma omp parallel for`,
//! compiled with `-fopenmp`), each thread taking one contiguous range. The source is compiled with the system C compiler (see `bench/cpu.rs` and the
//! README for why a compiler rather than a JIT).

use super::{
    c_ident, elementwise, helper_functions, input_params, outside, simplified, substitute, types,
    BodyWriter, Emitted, ScalarWriter, Target, C_HELPERS,
};
use crate::expr::Expr;
use crate::gpu::spec::{BinOp, Body, ElemType, UnOp};
use crate::gpu::spec::{KernelSpec, Tensor};
use crate::interval::Interval;
use crate::map::{IndexingMap, Variable};
use crate::MapError;

/// `(i) -> (output index)`: `i` runs over the output's elements in physical order.
pub fn loop_map(out: &Tensor) -> Result<IndexingMap, MapError> {
    let n = out.num_elements()?;
    let phys = out.physical_dims();
    let mut results = vec![Expr::constant(0); out.rank()];
    crate::gpu::rows::delinearize(out, &phys, &mut results)?;
    Ok(IndexingMap::new(
        vec![Variable::new("i", 0, n - 1)],
        vec![],
        vec![],
        results,
        vec![],
    ))
}

/// `(others.., ta, tb, ia, ib) -> (output index)`: output dims `a` and `b` in 32x32 tiles
/// (`ta`, `tb` the tile, `ia`, `ib` the place in it), the other dims outside, in physical
/// order; ragged tiles are cut by constraints.
pub fn tiled_map(out: &Tensor, a: usize, b: usize) -> Result<IndexingMap, MapError> {
    const T: i64 = crate::gpu::launch::TILE;
    let others: Vec<usize> = out
        .physical_dims()
        .into_iter()
        .filter(|&d| d != a && d != b)
        .collect();
    let mut dims: Vec<Variable> = others
        .iter()
        .map(|&d| Variable::new(format!("x{d}"), 0, out.dims[d] - 1))
        .collect();
    let n = others.len() as u32;
    let (da, db) = (out.dims[a], out.dims[b]);
    dims.push(Variable::new("ta", 0, (da + T - 1) / T - 1));
    dims.push(Variable::new("tb", 0, (db + T - 1) / T - 1));
    dims.push(Variable::new("ia", 0, T.min(da) - 1));
    dims.push(Variable::new("ib", 0, T.min(db) - 1));
    let mut results = vec![Expr::constant(0); out.rank()];
    for (k, &d) in others.iter().enumerate() {
        results[d] = Expr::var(k as u32);
    }
    let c = Expr::constant;
    results[a] = Expr::var(n).mul(c(T)).add(Expr::var(n + 2));
    results[b] = Expr::var(n + 1).mul(c(T)).add(Expr::var(n + 3));
    let constraints = vec![
        (results[a], Interval::new(0, da - 1)),
        (results[b], Interval::new(0, db - 1)),
    ];
    let m = IndexingMap::new(dims, vec![], vec![], results, constraints);
    Ok(crate::simplify::simplify(&m, &Default::default()).map)
}

/// What every host kernel starts with after its includes: the index helpers, the epoch of
/// memoized reductions, and one function per partition but the root.
pub fn prelude(spec: &KernelSpec, naive: bool) -> Result<String, MapError> {
    let mut src = String::from(C_HELPERS);
    src += super::EPOCH_DECL;
    src += "\n";
    for f in helper_functions(spec, naive, "static ", "restrict", true, "int64_t")? {
        src += &f;
        src += "\n";
    }
    Ok(src)
}

pub fn emit(spec: &KernelSpec, naive: bool) -> Result<Emitted, MapError> {
    super::refuse_empty(spec)?;
    let name = c_ident(&spec.name);
    let ty = spec.output.elem.c_name();
    if spec.root != crate::gpu::spec::Root::Elementwise {
        return emit_parts(spec, naive, &name);
    }
    if !naive && spec.more_outputs.is_empty() {
        if let Some(e) = emit_rows(spec, &name, ty)? {
            return Ok(e);
        }
    }
    let title = format!(
        "// {} for the CPU: {} = {} with {} partition(s); index arithmetic {}.\n",
        spec.name,
        spec.output.name,
        spec.output.shape_text(),
        spec.functions.len(),
        if naive {
            "naive (delinearize, apply each map, linearize)"
        } else {
            "from the simplified maps"
        }
    );
    // A transpose of the minor dimension is walked in 32x32 tiles, so the strided side of
    // each tile stays in cache; everything else is one loop in the output's physical order.
    let lm = match crate::gpu::launch::transpose_dims(spec)? {
        Some((a, b)) if spec.root_reduction().is_none() => tiled_map(&spec.output, a, b)?,
        _ => loop_map(&spec.output)?,
    };
    emit_nest(spec, naive, &lm, &name, &title)
}

/// The host kernel of an elementwise root as the loop nest of `lm`: its dimensions are the
/// loops (outermost first, the leading ones split across threads), its constraints skip
/// iterations, and its results are the output element each iteration computes. `title` is
/// the source's first line; `name` the entry point.
pub fn emit_nest(
    spec: &KernelSpec,
    naive: bool,
    lm: &IndexingMap,
    name: &str,
    title: &str,
) -> Result<Emitted, MapError> {
    let ty = spec.output.elem.c_name();
    let mut src = title.to_string();
    src += "#include <stdint.h>\n#include <math.h>\n\n";
    src += &prelude(spec, naive)?;
    let params: String = (0..spec.inputs.len())
        .map(|k| format!("p{k}"))
        .collect::<Vec<_>>()
        .join(", ");
    let depth = lm.dims.len();
    let mut w = BodyWriter::new(spec, naive, 1 + depth);
    w.memo = true;
    w.line(format!("// output index: {lm}"));
    for &(e, iv) in &lm.constraints {
        if let Some(cond) = super::outside(e, iv, &lm.names(), &lm.bounds()) {
            w.line(format!("if ({cond}) continue;"));
        }
    }
    let ctx = if naive {
        // The multi-index, computed once from the loop index.
        let names: Vec<String> = (0..spec.output.rank()).map(|d| format!("o{d}")).collect();
        for (d, &r) in lm.results.iter().enumerate() {
            let e = super::c_expr(r, &lm.names(), &lm.bounds());
            w.line(format!("const int64_t {} = {e};", names[d]));
        }
        let dims = names
            .iter()
            .zip(&spec.output.dims)
            .map(|(nm, &d)| Variable::new(nm.clone(), 0, d - 1))
            .collect();
        IndexingMap::new(
            dims,
            vec![],
            vec![],
            (0..spec.output.rank() as u32).map(Expr::var).collect(),
            vec![],
        )
    } else {
        lm.clone()
    };
    let v = w.body(&spec.functions[0].body, &ctx, &params)?;
    let k = w.offset(
        &ctx,
        &IndexingMap::identity(&spec.output.dims),
        &spec.output.strides()?,
        "out",
    )?;
    w.line(format!(
        "out[{k}] = {};",
        types::store(spec.output.elem, &v, false)
    ));
    for (n, o) in spec.more_outputs.iter().enumerate() {
        // A side output of a reduction has its own loop (after this one).
        if !o.is_side_of_reduction() {
            let ck = super::more_output_scope(&ctx, o)?;
            super::store_more_output(&mut w, n, &ck, &params)?;
        }
    }
    let mut decl = input_params(spec, "restrict");
    decl.extend(super::output_params(spec, "restrict"));
    src += &format!("static void {name}_body({}) {{\n", decl.join(", "));
    // The tiled transpose keeps its two in-tile loops inside each thread's share.
    let extents: Vec<i64> = lm
        .dims
        .iter()
        .map(|v| v.bounds.hi - v.bounds.lo + 1)
        .collect();
    let keep_inside = if depth >= 4 { 2 } else { 1 };
    let elements = spec.output.num_elements()?;
    src += &parallel_for(
        &extents,
        depth.saturating_sub(keep_inside).max(1),
        1,
        elements,
    );
    for (k, v) in lm.dims.iter().enumerate() {
        src += &format!(
            "{}for (int64_t {1} = {2}; {1} <= {3}; ++{1}) {{\n",
            "  ".repeat(k + 1),
            v.name,
            v.bounds.lo,
            v.bounds.hi
        );
    }
    for l in &w.lines {
        src += l;
        src += "\n";
    }
    for k in (0..depth).rev() {
        src += &format!("{}}}\n", "  ".repeat(k + 1));
    }
    src += &side_output_loops(spec, naive, &params)?;
    src += "}\n\n";
    src += &entry_point(spec, name, ty);
    Ok(Emitted {
        name: spec.name.clone(),
        target: Target::Cpu,
        source: super::finish_types(crate::gpu::emit::finish_epoch(src)),
        entry: name.to_string(),
    })
}

/// For a kernel of `elements` output elements, the OpenMP pragma that splits the leading
/// loops of a perfect nest with these extents
/// across threads: as few leading loops as give at least [`PARALLEL_ITERATIONS`] iterations
/// to share (collapsed into one when more than one), at most `max` of them. Each thread
/// gets one contiguous range of iterations (`schedule(static)`), so a reduction memoized
/// by row is computed once per row by the thread that owns the row. Without `-fopenmp` the
/// pragma is ignored and the loops run on one thread.
pub fn parallel_for(extents: &[i64], max: usize, indent: usize, elements: i64) -> String {
    if elements < PARALLEL_MIN_ELEMENTS {
        return String::new();
    }
    let mut n = 0;
    let mut iters = 1i64;
    while n < max.min(extents.len()) && iters < PARALLEL_ITERATIONS {
        iters = iters.saturating_mul(extents[n]);
        n += 1;
    }
    let pad = "  ".repeat(indent);
    match n {
        0 => String::new(),
        1 => format!("{pad}#pragma omp parallel for schedule(static)\n"),
        _ => format!("{pad}#pragma omp parallel for collapse({n}) schedule(static)\n"),
    }
}

/// Iterations of the parallel loop(s) that are enough to share among threads evenly.
pub const PARALLEL_ITERATIONS: i64 = 256;

/// Output elements (256 Ki, 1 MiB of f32) under which a kernel runs on one thread: waking
/// threads costs more than such a kernel (on a busy machine, a time slice).
pub const PARALLEL_MIN_ELEMENTS: i64 = 1 << 18;

/// The exported entry of a CPU kernel: `void NAME(void **args)` casting the inputs, in
/// order, then the output, and calling `NAME_body`.
pub fn entry_point(spec: &KernelSpec, name: &str, ty: &str) -> String {
    let casts: Vec<String> = spec
        .inputs
        .iter()
        .enumerate()
        .map(|(k, t)| format!("(const {} *)args[{k}]", t.elem.c_name()))
        .chain(std::iter::once(format!(
            "({ty} *)args[{}]",
            spec.inputs.len()
        )))
        .chain(spec.more_outputs.iter().enumerate().map(|(k, o)| {
            format!(
                "({} *)args[{}]",
                o.tensor.elem.c_name(),
                spec.inputs.len() + 1 + k
            )
        }))
        .collect();
    format!(
        "// entry: args = inputs in order, then the output{}\nvoid {name}(void **args) {{\n{}  {name}_body({});\n}}\n",
        if spec.more_outputs.is_empty() { "" } else { "s" },
        crate::gpu::emit::EPOCH_STEP,
        casts.join(", ")
    )
}

/// The host kernel of a concatenate or a dynamic-update-slice: one loop per part (each
/// operand of the concatenate over its own shape, or the update), in the output's physical
/// order, storing at the part's offset (the concatenate's constant offset, or the clamped
/// start indices `rt0, ..` read at run time).
fn emit_parts(spec: &KernelSpec, naive: bool, name: &str) -> Result<Emitted, MapError> {
    use crate::gpu::spec::Root;
    let ty = spec.output.elem.c_name();
    let mut src = format!(
        "// {} for the CPU: {} = {}, {}; index arithmetic {}.\n",
        spec.name,
        spec.output.name,
        spec.output.shape_text(),
        match spec.root {
            Root::Concatenate { .. } => "a loop per operand of the concatenate",
            Root::Scatter { .. } => "a scatter, one loop over the updates (on one thread)",
            _ => "an in-place dynamic-update-slice, a loop over the update",
        },
        if naive {
            "naive (delinearize, apply each map, linearize)"
        } else {
            "from the simplified maps"
        }
    );
    src += "#include <stdint.h>\n#include <math.h>\n\n";
    src += &prelude(spec, naive)?;
    let params: String = (0..spec.inputs.len())
        .map(|k| format!("p{k}"))
        .collect::<Vec<_>>()
        .join(", ");
    let parts: Vec<(usize, i64, usize)> = match &spec.root {
        Root::Concatenate { dim, parts } => parts.iter().map(|&(f, o)| (f, o, *dim)).collect(),
        _ => vec![(0, 0, 0)],
    };
    let out_strides = spec.output.strides()?;
    let mut body = String::new();
    for (f, off, dim) in parts {
        let fdims = spec
            .functions
            .get(f)
            .ok_or_else(|| MapError::Other(format!("no function {f}")))?
            .dims
            .clone();
        let part = Tensor {
            name: spec.functions[f].name.clone(),
            elem: spec.output.elem,
            dims: fdims.clone(),
            minor_to_major: if matches!(spec.root, Root::Scatter { .. }) {
                (0..fdims.len()).rev().collect()
            } else {
                spec.output.minor_to_major.clone()
            },
        };
        let lm = crate::simplify::simplify(&loop_map(&part)?, &Default::default()).map;
        let mut w = BodyWriter::new(spec, naive, 2);
        w.memo = true;
        w.line(format!("// f{f}'s index: {lm}"));
        let ctx = lm.clone();
        let v = super::function_value(&mut w, f, &ctx, &params)?;
        // The store: the part's index shifted to its place in the output.
        let nv = lm.num_vars() as u32;
        if let Root::Scatter { op, .. } = &spec.root {
            // The scatter's store: through the launch's thread → output map (its loop
            // variable `i` a thread id of a one-thread grid would be), after the start
            // indices are read and the window checked.
            let wm = crate::gpu::launch::scatter_write(spec, &lm)?;
            super::scatter_starts(&mut w, &ctx)?;
            let k = super::store_offset(&mut w, &wm, &out_strides, "out")?;
            w.line(super::combine_store(
                *op,
                spec.output.elem,
                &format!("out[{k}]"),
                &v,
                false,
            ));
            let n = part.num_elements()?;
            body += &format!("  for (int64_t i = 0; i <= {}; ++i) {{\n", n - 1);
            for l in &w.lines {
                body += l;
                body += "\n";
            }
            body += "  }\n";
            continue;
        }
        let (runtimes, shift): (Vec<Variable>, Vec<Expr>) = match &spec.root {
            Root::DynamicUpdateSlice { .. } => (0..fdims.len())
                .map(|d| {
                    let hi = spec.output.dims[d] - fdims[d];
                    (
                        Variable::new(format!("rt{d}"), 0, hi),
                        Expr::var(nv + d as u32),
                    )
                })
                .unzip(),
            _ => (
                vec![],
                (0..fdims.len())
                    .map(|d| Expr::constant(if d == dim { off } else { 0 }))
                    .collect(),
            ),
        };
        let results = lm
            .results
            .iter()
            .zip(&shift)
            .map(|(&r, &s)| r.add(s))
            .collect();
        let wm = crate::simplify::simplify(
            &IndexingMap::new(
                lm.dims.clone(),
                vec![],
                runtimes,
                results,
                lm.constraints.clone(),
            ),
            &Default::default(),
        )
        .map;
        let k = super::store_offset(&mut w, &wm, &out_strides, "out")?;
        w.line(format!(
            "out[{k}] = {};",
            types::store(spec.output.elem, &v, false)
        ));
        let n = part.num_elements()?;
        body += &parallel_for(&[n], 1, 1, n);
        body += &format!("  for (int64_t i = 0; i <= {}; ++i) {{\n", n - 1);
        for l in &w.lines {
            body += l;
            body += "\n";
        }
        body += "  }\n";
    }
    // The start indices the stores use (one the simplifier fixed at 0 is not declared).
    let starts: String = super::dus_starts(spec, "int64_t")
        .into_iter()
        .enumerate()
        .filter(|(d, _)| {
            body.lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .any(|l| l.contains(&format!("rt{d}")))
        })
        .map(|(_, l)| format!("  {l}\n"))
        .collect();
    let mut decl = input_params(spec, "restrict");
    decl.extend(super::output_params(spec, "restrict"));
    src += &format!(
        "static void {name}_body({}) {{\n{starts}{body}}}\n\n",
        decl.join(", ")
    );
    src += &entry_point(spec, name, ty);
    Ok(Emitted {
        name: spec.name.clone(),
        target: Target::Cpu,
        source: super::finish_types(crate::gpu::emit::finish_epoch(src)),
        entry: name.to_string(),
    })
}

pub use crate::gpu::rows::row_map;

/// A vectorizable `expf`: Cephes' polynomial on [-ln2/2, ln2/2] and a power of two made
/// from bits, in two halves so subnormal results come out right. NaN in NaN out, and plain
/// arithmetic, so a loop calling it vectorizes. `n = round(x / ln2)` comes from adding
/// 1.5 * 2^23 (the sum's low bits are the integer `n`, no float-to-int conversion) and the
/// range checks are only the two selects at the end: out of range the bits are garbage the
/// selects replace (unsigned arithmetic, so no overflow), a NaN goes through the polynomial.
/// 30 vector instructions where the form with a clamped conversion took 45 (issue 28: exp
/// was two thirds of a softmax of short rows).
///
/// Where the target has fused multiply-add (`__FMA__`, gcc and clang with `-march=native`
/// on x86, or AArch64), the reduction and the polynomial are `fmaf` calls, which the
/// compiler inlines as vector FMAs: the kernels are compiled as ISO C (`-std=c11`), which
/// turns gcc's contraction of `a * b + c` off, so the plain form is a multiply and an add
/// each, 11 instructions more per vector (exp was half of a softmax of rows of 1024: 3.5 ms
/// of CPU time on one thread, 3.1 with FMA). With FMA the polynomial is Horner's form to the
/// end, `1 + r (1 + r p(r))`, one instruction shorter and more exact there than
/// `p r^2 + r + 1` (worst 0.89 ulp against 1.01). Without FMA the plain form, as before.
/// Within 1 ulp of the exact result for every f32 input (exhaustively, against libm's
/// `exp` in double): where the result is normal 0.89 ulp at worst with FMA and 0.99
/// without, where it is subnormal 0.85 and 0.75 ulp of the subnormal spacing.
/// `tests/cpu_expf.rs` sweeps the inputs (a stride through every bit pattern, every input
/// with a subnormal result, the edges, infinities and NaNs) through both forms as the bench
/// compiles them.
pub const C_EXPF: &str = "#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
#define IX_EXPF_FMA 1
#endif
static inline float ix_expf(float x) {
  union { float f; uint32_t u; } t, a, b;
#ifdef IX_EXPF_FMA
  t.f = fmaf(x, 1.44269504088896341f, 12582912.0f);
  const float n = t.f - 12582912.0f;
  const float r = fmaf(n, 2.12194440e-4f, fmaf(n, -0.693359375f, x));
  float p = 1.9875691500E-4f;
  p = fmaf(p, r, 1.3981999507E-3f); p = fmaf(p, r, 8.3334519073E-3f); p = fmaf(p, r, 4.1665795894E-2f);
  p = fmaf(p, r, 1.6666665459E-1f); p = fmaf(p, r, 5.0000001201E-1f);
  const float y = fmaf(r, fmaf(p, r, 1.0f), 1.0f);
#else
  t.f = x * 1.44269504088896341f + 12582912.0f;
  const float n = t.f - 12582912.0f;
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f; p = p * r + 8.3334519073E-3f; p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f; p = p * r + 5.0000001201E-1f;
  const float y = p * r * r + r + 1.0f;
#endif
  const uint32_t k = t.u - 0x4B400000u;
  const uint32_t k1 = (uint32_t)((int32_t)k >> 1), k2 = k - k1;
  a.u = (k1 + 127u) << 23; b.u = (k2 + 127u) << 23;
  const float e = y * a.f * b.f;
  return x > 88.72283f ? INFINITY : (x < -103.972f ? 0.0f : e);
}
";

/// Writes a kernel whose reductions are all per row: each reduction is computed once per
/// row, before the row's elements, in a loop of its own (`#pragma omp simd reduction`, so
/// the compiler may sum in vector lanes; a float sum in explicit lanes), and the row's
/// elements are then one loop with no branches (`#pragma omp simd`), rows split across
/// threads. Short rows go in blocks of rows ([`row_block`], [`blocked_rows`]): each
/// reduction for the block's rows, then their elements. Calls are inlined. `None` when
/// the fusion has no reduction, or one that is not per row (its value moves along the row
/// or with another reduction's variable): the memoizing loop handles those.
fn emit_rows(spec: &KernelSpec, name: &str, ty: &str) -> Result<Option<Emitted>, MapError> {
    let mut has_reduce = false;
    for f in &spec.functions {
        f.body
            .visit(&mut |b| has_reduce |= matches!(b, Body::Reduce { .. }));
    }
    if !has_reduce || spec.root_reduction().is_some() {
        return Ok(None);
    }
    // The output's rows, or each element its own where the reductions are per element.
    let Some(lm) = crate::gpu::rows::rows_of(spec)?.or(row_map(&spec.output)?) else {
        return Ok(None);
    };
    let params: String = (0..spec.inputs.len())
        .map(|k| format!("p{k}"))
        .collect::<Vec<_>>()
        .join(", ");
    let col = lm.dims.get(1).map(|d| d.bounds);
    let (r, c) = (&lm.dims[0], &lm.dims[1]);
    let rows_n = r.bounds.hi - r.bounds.lo + 1;
    let block = row_block(rows_n, c.bounds.hi - c.bounds.lo + 1);
    // Row by row, the next row's lines are fetched while this one is computed (see
    // `next_row_prefetch`).
    let next_row = (block == 1 && rows_n > 1).then_some(r.bounds);
    let write = |plan: Vec<RowKey>| -> Result<(Rows, BodyWriter, String), MapError> {
        let mut rows = Rows {
            share_calls: spec.inline_nodes_exceed(crate::gpu::spec::INLINE_NODES),
            spec,
            params: params.clone(),
            hoisted: vec![],
            done: vec![],
            count: 0,
            ok: true,
            col,
            plan,
            filled: vec![],
            read: vec![],
            next_row,
            loads: vec![],
            prefetched: false,
            prefetch_left: PREFETCH_ROW_BYTES,
        };
        let mut w = BodyWriter::new(spec, false, 3);
        w.line(format!("// output index: {lm}"));
        let v = rows.expr(&mut w, &spec.functions[0].body, &lm)?;
        Ok((rows, w, v))
    };
    let (mut rows, mut w, mut v) = write(vec![])?;
    if !rows.ok {
        return Ok(None);
    }
    // A value a reduction's loop computes for every column of the row and the row's
    // elements use again at their own column (softmax's exp(x - max), summed and then
    // divided): written a second time, the reduction keeps it in a row buffer and the
    // elements read it back instead of recomputing it.
    let plan: Vec<RowKey> = rows
        .filled
        .iter()
        .filter(|k| rows.read.contains(k))
        .cloned()
        .collect();
    if !plan.is_empty() {
        (rows, w, v) = write(plan)?;
        if !rows.ok {
            return Ok(None);
        }
    }
    let k = w.offset(
        &lm,
        &IndexingMap::identity(&spec.output.dims),
        &spec.output.strides()?,
        "out",
    )?;
    w.line(format!(
        "out[{k}] = {};",
        types::store(spec.output.elem, &v, false)
    ));
    // The next row of the output, fetched (for writing) before this row's elements.
    let out_bytes = (c.bounds.hi - c.bounds.lo + 1).saturating_mul(spec.output.elem.bytes());
    let out_prefetch = match next_row {
        Some(rb) if out_bytes <= rows.prefetch_left => {
            contiguous_prefetch(&lm, &spec.output.strides()?, spec.output.elem.bytes(), rb)?
        }
        _ => None,
    };
    let mut src = if block > 1 {
        format!(
            "// {} for the CPU: {} = {}, in blocks of {block} rows: each reduction for the block's rows, then their elements; index arithmetic from the simplified maps.\n",
            spec.name,
            spec.output.name,
            spec.output.shape_text(),
        )
    } else {
        format!(
            "// {} for the CPU: {} = {}, row by row: the reductions once per row, then the row's elements; index arithmetic from the simplified maps.\n",
            spec.name,
            spec.output.name,
            spec.output.shape_text(),
        )
    };
    src += "#include <stdint.h>\n#include <math.h>\n\n";
    let prefetching = rows.prefetched || out_prefetch.is_some();
    if prefetching {
        src += C_PREFETCH;
    }
    if w.lines
        .iter()
        .chain(rows.hoisted.iter().flat_map(|h| &h.lines))
        .any(|l| l.contains("ix_expf"))
    {
        src += C_EXPF;
    }
    src += C_HELPERS;
    src += "\n";
    let mut decl = input_params(spec, "restrict");
    decl.push(format!("{ty} *restrict out"));
    src += &format!("static void {name}_body({}) {{\n", decl.join(", "));
    // Threads by output elements, as every CPU kernel: weighting by the passes over a row
    // put 2 threads on a 0.4 ms softmax of 4096 rows of 32, which on a loaded machine ran
    // 80x slower (each thread waiting for a core; issue 28, measured with
    // benches/xla_cpu.py): a short kernel stays on one thread.
    src += &parallel_for(&[rows_n / block], 1, 1, spec.output.num_elements()?);
    let element_loop = |pad: &str| -> String {
        let mut s = format!("{pad}#pragma omp simd\n");
        s += &format!(
            "{pad}for (int64_t c = {}; c <= {}; ++c) {{\n",
            c.bounds.lo, c.bounds.hi
        );
        for l in &w.lines {
            s += &format!("{}{l}\n", &pad[4..]);
        }
        s += &format!("{pad}}}\n");
        s
    };
    if block == 1 {
        src += &format!(
            "  for (int64_t r = {}; r <= {}; ++r) {{\n",
            r.bounds.lo, r.bounds.hi
        );
        if prefetching {
            src += &format!(
                "    const int64_t r_next = r < {0} ? r + 1 : {0};\n",
                r.bounds.hi
            );
        }
        for h in &rows.hoisted {
            if let Some((b, t, n)) = &h.buffer {
                src += &format!("    {t} {b}[{n}];\n");
            }
            for l in &h.lines {
                src += l;
                src += "\n";
            }
        }
        if let Some((step, off)) = &out_prefetch {
            src += &format!(
                "    for (int64_t c = {}; c <= {}; c += {step}) IX_PREFETCH(&out[{off}], 1);\n",
                c.bounds.lo, c.bounds.hi
            );
        }
        src += &element_loop("    ");
        src += "  }\n}\n\n";
    } else {
        src += &blocked_rows(&rows.hoisted, r.bounds, block, &element_loop("      "));
    }
    src += &entry_point(spec, name, ty);
    Ok(Some(Emitted {
        name: spec.name.clone(),
        target: Target::Cpu,
        source: super::finish_types(crate::gpu::emit::finish_epoch(src)),
        entry: name.to_string(),
    }))
}

/// Rows per block of [`emit_rows`] for `rows` rows of `cols` columns: a short row's
/// reductions are a few vector operations and a horizontal step each, so a kernel that
/// finishes one row before starting the next is one long chain of dependent steps (issue
/// 28: softmax f32[4096,32], 0.091 ms against XLA:CPU's 0.086). In blocks, each reduction
/// runs for all the block's rows before the next starts, and the rows' independent chains
/// overlap: 0.8x the time row by row, 0.52x with the reductions' lanes and the cheaper
/// [`C_EXPF`] (the same machine and compiler, benches/xla_cpu.py). Enough rows for
/// [`ROW_BLOCK_ELEMENTS`] elements, at most [`ROW_BLOCK_MAX`], and a divisor of `rows` (1:
/// row by row).
fn row_block(rows: i64, cols: i64) -> i64 {
    if cols <= 0 || cols >= ROW_BLOCK_ELEMENTS {
        return 1;
    }
    let want = ((ROW_BLOCK_ELEMENTS + cols - 1) / cols).min(ROW_BLOCK_MAX);
    (1..=want).rev().find(|b| rows % b == 0).unwrap_or(1)
}

/// Elements a block of short rows should hold (see [`row_block`]).
const ROW_BLOCK_ELEMENTS: i64 = 256;

/// Rows a block holds at most: 4, 8 and 16 rows of 32 ran within 2 % of each other.
const ROW_BLOCK_MAX: i64 = 16;

/// Whether `text` uses the C identifier `name` (not as part of a longer one).
fn uses(text: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(name).any(|(i, _)| {
        !text[..i].chars().next_back().is_some_and(ident)
            && !text[i + name.len()..].chars().next().is_some_and(ident)
    })
}

/// The row loops of [`emit_rows`] in blocks of `block` rows (`rb` the block's first row):
/// each hoisted reduction in a loop of its own over the block's rows, keeping its value in
/// an array of the block (`rowN_b`, and row buffers `rowbufK_b`) that the later loops read
/// back; then a loop over the block's rows computing their elements (`elements`, the
/// element loop at that depth). The block's arrays are local to the block, so blocks may run
/// on different threads.
fn blocked_rows(hoisted: &[Hoisted], rows: Interval, block: i64, elements: &str) -> String {
    let mut src = format!(
        "  for (int64_t rb = {}; rb <= {}; rb += {block}) {{\n",
        rows.lo, rows.hi
    );
    for h in hoisted {
        src += &format!("    {} {}_b[{block}];\n", h.ty, h.acc);
        if let Some((b, t, n)) = &h.buffer {
            src += &format!("    {t} {b}_b[{block}][{n}];\n");
        }
    }
    let row_loop = format!(
        "    for (int64_t r = rb; r <= rb + {}; ++r) {{\n",
        block - 1
    );
    // The values of earlier loops that `text` reads, from the block's arrays.
    let reads = |earlier: &[Hoisted], text: &str| -> String {
        let mut s = String::new();
        for e in earlier {
            if uses(text, &e.acc) {
                s += &format!("      const {} {1} = {1}_b[r - rb];\n", e.ty, e.acc);
            }
            if let Some((b, t, _)) = &e.buffer {
                if uses(text, b) {
                    s += &format!("      const {t} *restrict {b} = {b}_b[r - rb];\n");
                }
            }
        }
        s
    };
    for (k, h) in hoisted.iter().enumerate() {
        let text = h.lines.join("\n");
        src += &row_loop;
        src += &reads(&hoisted[..k], &text);
        if let Some((b, t, _)) = &h.buffer {
            src += &format!("      {t} *restrict {b} = {b}_b[r - rb];\n");
        }
        for l in &h.lines {
            src += &format!("  {l}\n");
        }
        src += &format!("      {0}_b[r - rb] = {0};\n", h.acc);
        src += "    }\n";
    }
    src += &row_loop;
    src += &reads(hoisted, elements);
    src += elements;
    src += "    }\n  }\n}\n\n";
    src
}

/// The state of [`emit_rows`]: the hoisted reductions at row level (innermost first), and
/// the reductions already hoisted (by their map from the row) with the variable holding
/// each.
struct Rows<'a> {
    spec: &'a KernelSpec,
    /// A called function's value kept in a register and read again where the same call
    /// recurs in scope ([`KernelSpec::inline_nodes_exceed`]: written in place, its calls would
    /// repeat exponentially).
    share_calls: bool,
    params: String,
    hoisted: Vec<Hoisted>,
    done: Vec<(String, String)>,
    count: usize,
    ok: bool,
    /// The bounds of the row's column variable (`c`, variable 1 of the element index).
    col: Option<Interval>,
    /// Values kept in row buffers (`rowbufK` for entry K): chosen after a first writing.
    plan: Vec<RowKey>,
    /// Values a reduction's loop computes at every column of the row, in this writing.
    filled: Vec<RowKey>,
    /// Values the row's elements compute at their own column, in this writing.
    read: Vec<RowKey>,
    /// The rows' bounds where the kernel goes row by row and fetches the next row ahead
    /// (`r_next`, see [`next_row_prefetch`]); `None` in blocks of rows or for one row.
    next_row: Option<Interval>,
    /// The loads (input, index in the reduction's variables) of the reduction being written.
    loads: Vec<(usize, IndexingMap)>,
    /// Whether a reduction's loop fetches the next row's inputs.
    prefetched: bool,
    /// Bytes of the next row that may still be fetched ahead ([`PREFETCH_ROW_BYTES`]).
    prefetch_left: i64,
}

/// One hoisted reduction: its lines at row level (the accumulator's declaration, the loop,
/// the NaN fix-up), the accumulator and its C type, and the row buffer its loop fills
/// (name, C type, columns), declared before the lines.
struct Hoisted {
    lines: Vec<String>,
    acc: String,
    ty: String,
    buffer: Option<(String, String, i64)>,
}

/// A fusion function's value at one point of a row: the function and its simplified index,
/// in terms of the row (variable 0) and the column (variable 1; a reduction's own variable
/// in its loop, `c` in the element loop: the same place when the expressions are equal).
type RowKey = (usize, Vec<Expr>);

/// A row buffer's index for the column variable `v`, whose first value is `lo`.
fn column(v: &str, lo: i64) -> String {
    match lo {
        0 => v.to_string(),
        lo if lo < 0 => format!("{v} + {}", lo.unsigned_abs()),
        lo => format!("{v} - {lo}"),
    }
}

/// Columns a row buffer may hold (64 KiB of f64): a longer row recomputes its values.
const ROW_BUFFER_MAX: i64 = 8192;

/// `IX_PREFETCH(address, for writing)`: a hint to fetch the address's cache line into the
/// nearest cache (gcc's and clang's builtin; nothing elsewhere). A prefetch never faults
/// and changes no value.
pub const C_PREFETCH: &str = "#if defined(__GNUC__) || defined(__clang__)
#define IX_PREFETCH(p, w) __builtin_prefetch((p), (w), 3)
#else
#define IX_PREFETCH(p, w) ((void)0)
#endif
";

/// Bytes of a cache line, the unit a prefetch fetches.
const CACHE_LINE: i64 = 64;

/// Bytes of the next row fetched ahead at most (inputs first, then the output), a sixth of
/// a 48 KiB L1 data cache, a quarter of a 32 KiB one: with the row itself, its row buffer
/// and its output they stay in the L1. One thread, CPU time of a softmax's f32 rows (cached,
/// and with the data out of the caches): 512 columns, input and output fetched 2.4 and 3.8
/// ms against 2.6 and 4.7 without; 1024, 2.6 and 4.1 against 3.0 and 4.9; 2048, the input
/// only 2.8 and 4.5 against 3.0 and 4.9 (and its output too, 3.0 and 4.8); 4096 with both,
/// 3.5 and 4.8 against 3.0 and 4.4: a long row's next one pushed the row itself out.
const PREFETCH_ROW_BYTES: i64 = 8 << 10;

/// The next row's lines of each input a row's first loop loads (`loads`: input, index in
/// the row `r` and the loop's column `s0`), one `IX_PREFETCH` per line, at the top of each
/// step of `lanes` columns (`s0b`, the step's first column); the row after `r` is
/// `r_next` (the last row fetches itself). Row by row, each row ends where a 4 KiB page
/// does when it is 4 KiB long (f32[.., 1024]), and the hardware's stream prefetcher stops
/// at page boundaries: every row started with misses. Fetching the next row while this one
/// is computed: softmax f32[4096,1024] on one thread took 2.6 ms of CPU time, was 3.0, and
/// 4.1 with its data out of the caches, was 4.9 (with the output's next row, before the
/// row's elements, 2.5 and 4.1). Only loads that run over consecutive elements along the
/// column (checked on the map's values) and have no constraints: one prefetch then covers
/// a line of them. Each input's row comes out of `left`, the bytes the next row may take
/// ([`PREFETCH_ROW_BYTES`]); one that does not fit is not fetched.
fn next_row_prefetch(
    spec: &KernelSpec,
    loads: &[(usize, IndexingMap)],
    rows: Interval,
    lanes: i64,
    left: &mut i64,
) -> Result<Vec<String>, MapError> {
    let mut lines = vec![];
    let mut seen: Vec<(usize, String)> = vec![];
    for (input, m) in loads {
        let t = &spec.inputs[*input];
        let Some((step, first)) = contiguous_prefetch(m, &t.strides()?, t.elem.bytes(), rows)?
        else {
            continue;
        };
        if seen.contains(&(*input, first.clone())) {
            continue;
        }
        seen.push((*input, first));
        let cols = m.vars().nth(1).map_or(1, |v| v.bounds.hi - v.bounds.lo + 1);
        let bytes = cols.saturating_mul(t.elem.bytes());
        if bytes > *left {
            continue;
        }
        *left -= bytes;
        // One prefetch per line of the step's `lanes` elements.
        let mut k = 0;
        while k < lanes {
            let offset = prefetch_offset(m, &t.strides()?, rows, k)?;
            let line = format!("IX_PREFETCH(&p{input}[{offset}], 0);");
            if !lines.contains(&line) {
                lines.push(line);
            }
            k += step;
        }
    }
    Ok(lines)
}

/// Where `m` (`(row)[column] -> index`, or `(row, column) -> index`; `strides` the tensor's,
/// elements of `bytes` bytes) runs over consecutive elements along the column, in the rows
/// `rows` and with no constraint, and the next row's elements are elsewhere: the elements a
/// cache line holds (the step between prefetches) and the offset at the next row
/// (`r_next`) and column `c` (variable 1 named `c` for `(row, column)`, `s0b` for
/// `(row)[column]`). `None` otherwise, or for elements wider than a line. The column is checked at its first values in the first and last
/// rows: a prefetch is a hint, so a pattern that changes further along costs time, never a
/// value.
fn contiguous_prefetch(
    m: &IndexingMap,
    strides: &[i64],
    bytes: i64,
    rows: Interval,
) -> Result<Option<(i64, String)>, MapError> {
    let (n_dims, n_ranges) = (m.dims.len(), m.ranges.len());
    if n_dims + n_ranges != 2
        || n_dims == 0
        || !m.constraints.is_empty()
        || !m.runtimes.is_empty()
        || bytes <= 0
        || bytes > CACHE_LINE
        || strides.len() != m.results.len()
    {
        return Ok(None);
    }
    let cols = m
        .vars()
        .nth(1)
        .map(|v| v.bounds)
        .unwrap_or(Interval::new(0, 0));
    let lin = Expr::linear_combination(&m.results, strides);
    let at = |r: i64, c: i64| crate::expr::eval(lin, &[r, c]).ok();
    for r in [rows.lo, rows.hi] {
        for c in cols.lo..cols.hi.min(cols.lo + 2 * CACHE_LINE) {
            match (at(r, c), at(r, c + 1)) {
                (Some(a), Some(b)) if b - a == 1 => {}
                _ => return Ok(None),
            }
        }
    }
    // The next row elsewhere (a load the same at every row, a bias along the columns, is in
    // the cache already).
    if rows.hi == rows.lo || at(rows.lo, cols.lo) == at(rows.lo + 1, cols.lo) {
        return Ok(None);
    }
    let step = CACHE_LINE / bytes;
    Ok(Some((step, prefetch_offset(m, strides, rows, 0)?)))
}

/// The C offset of `m`'s index at the next row (`r_next`) and the column variable plus
/// `k` (`c + k` or `s0b + k`: see [`contiguous_prefetch`]), simplified.
fn prefetch_offset(
    m: &IndexingMap,
    strides: &[i64],
    rows: Interval,
    k: i64,
) -> Result<String, MapError> {
    let lin = Expr::linear_combination(&m.results, strides).substitute(&mut |v| {
        if v == 1 && k != 0 {
            Expr::var(1).add(Expr::constant(k))
        } else {
            Expr::var(v)
        }
    });
    let mut at = m.clone();
    at.results = vec![lin];
    at.constraints = vec![];
    let name = |v: &Variable, n: &str| Variable::new(n, v.bounds.lo, v.bounds.hi);
    if let Some(d) = at.dims.first_mut() {
        *d = Variable::new("r_next", rows.lo, rows.hi);
    }
    if at.dims.len() == 2 {
        at.dims[1] = name(&at.dims[1], "c");
    } else if let Some(s) = at.ranges.first_mut() {
        *s = name(s, "s0b");
    }
    let s = simplified(&at);
    Ok(match s.results.first() {
        Some(&e) if s.status == crate::map::Status::Defined => {
            super::c_expr(e, &s.names(), &s.bounds())
        }
        _ => super::c_expr(lin, &at.names(), &at.bounds()),
    })
}

impl Rows<'_> {
    fn fresh(&mut self, prefix: &str) -> String {
        self.count += 1;
        format!("{prefix}{}", self.count)
    }

    /// A C expression for `b` at the index `ctx` gives (`ctx`'s variable 0 is the row `r`),
    /// of the register type of `b`'s element type (`want` for a bare constant).
    fn expr(
        &mut self,
        w: &mut BodyWriter,
        b: &Body,
        ctx: &IndexingMap,
    ) -> Result<String, MapError> {
        let want = self.spec.output.elem;
        self.expr_t(w, b, ctx, want)
    }

    fn expr_t(
        &mut self,
        w: &mut BodyWriter,
        b: &Body,
        ctx: &IndexingMap,
        want: ElemType,
    ) -> Result<String, MapError> {
        let t = self.spec.elem_opt(b).unwrap_or(want);
        Ok(match b {
            Body::Const(c) => types::constant(*c, t),
            Body::Load { input, map } => {
                if self.next_row.is_some() {
                    self.loads.push((*input, substitute(ctx, map)?));
                }
                w.body_t(b, ctx, &self.params.clone(), t)?
            }
            Body::Index { .. }
            | Body::Guard { .. }
            | Body::DynCall { .. }
            | Body::Opaque { .. }
            | Body::Param(..)
            | Body::ReduceTuple { .. } => w.body_t(b, ctx, &self.params.clone(), t)?,
            Body::Unary(..)
            | Body::Binary(..)
            | Body::Convert(..)
            | Body::Compare(..)
            | Body::Select(..) => elementwise(&mut AtRow { rows: self, w, ctx }, b, t)?,
            Body::Call { func, map } => {
                let inner = substitute(ctx, map)?;
                let f = &self.spec.functions[*func];
                let shown = simplified(&inner);
                w.line(format!("// {} at {shown}", f.name));
                let ft = self.spec.function_elem(*func);
                // In the element loop, a value a reduction's loop kept for this column.
                let at_column = ctx.ranges.is_empty()
                    && ctx.dims.len() == 2
                    && shown.ranges.is_empty()
                    && shown.constraints.is_empty();
                if at_column {
                    let key: RowKey = (*func, shown.results.clone());
                    if let (Some(k), Some(col)) =
                        (self.plan.iter().position(|p| *p == key), self.col)
                    {
                        w.line(format!("// {} kept by the row's reduction", f.name));
                        return Ok(format!("rowbuf{k}[{}]", column(&ctx.dims[1].name, col.lo)));
                    }
                    if !self.read.contains(&key) {
                        self.read.push(key);
                    }
                }
                if self.share_calls {
                    if let Some(v) = w.reused_call(*func, &inner) {
                        return Ok(v);
                    }
                    let from = w.line_count();
                    let x = self.expr_t(w, &f.body, &inner, ft)?;
                    return Ok(w.remember_call(*func, inner, x, from));
                }
                self.expr_t(w, &f.body, &inner, ft)?
            }
            Body::Reduce {
                op,
                init,
                func,
                map,
            } => {
                let m = substitute(ctx, map)?;
                // Its own variables come after the scope's; the rest must be the row alone.
                let first_new = (m.dims.len() + ctx.ranges.len()) as u32;
                let n_new = m.ranges.len() - ctx.ranges.len();
                let mut per_row = true;
                let mut rename = |v: u32| -> Expr {
                    if v == 0 {
                        Expr::var(0)
                    } else if v >= first_new {
                        Expr::var(1 + v - first_new)
                    } else {
                        per_row = false;
                        Expr::var(0)
                    }
                };
                let results: Vec<Expr> = m
                    .results
                    .iter()
                    .map(|r| r.substitute(&mut rename))
                    .collect();
                let constraints: Vec<_> = m.constraints[ctx.constraints.len()..]
                    .iter()
                    .map(|&(e, iv)| (e.substitute(&mut rename), iv))
                    .collect();
                if !per_row {
                    self.ok = false;
                    return Ok("0".into());
                }
                let ranges: Vec<Variable> = m.ranges[ctx.ranges.len()..]
                    .iter()
                    .enumerate()
                    .map(|(k, v)| Variable::new(format!("s{k}"), v.bounds.lo, v.bounds.hi))
                    .collect();
                let canon = IndexingMap::new(
                    vec![m.dims[0].clone()],
                    ranges,
                    vec![],
                    results,
                    constraints,
                );
                let shown = simplified(&canon);
                let key = format!("{func} {op:?} {init} {shown}");
                if let Some((_, acc)) = self.done.iter().find(|(k, _)| *k == key) {
                    return Ok(acc.clone());
                }
                // The loop body first: reductions it needs are hoisted before this one.
                let mut body = BodyWriter::new(self.spec, false, 2 + n_new);
                for (e, iv) in &shown.constraints {
                    if let Some(cond) = outside(*e, *iv, &shown.names(), &shown.bounds()) {
                        body.line(format!("if ({cond}) continue;"));
                    }
                }
                let f = &self.spec.functions[*func];
                let outer_loads = std::mem::take(&mut self.loads);
                let mut x = self.expr_t(&mut body, &f.body, &canon, t)?;
                let loads = std::mem::replace(&mut self.loads, outer_loads);
                let acc = self.fresh("row");
                let mut lines: Vec<String> = vec![];
                let mut buffer = None;
                let pad = |k: usize| "  ".repeat(k);
                // Keep the operand in a row buffer when the elements read it again (see
                // `emit_rows`): one loop variable running over exactly the row's columns,
                // every column visited (no constraint), a value dearer than a load.
                let over_columns = n_new == 1
                    && shown.constraints.is_empty()
                    && self.col == Some(canon.ranges[0].bounds)
                    && self
                        .col
                        .is_some_and(|c| c.hi.saturating_sub(c.lo) < ROW_BUFFER_MAX)
                    && self.spec.function_elem(*func) == t
                    && !matches!(
                        f.body,
                        Body::Load { .. } | Body::Param(..) | Body::Const(..) | Body::Index { .. }
                    );
                if over_columns {
                    let key: RowKey = (*func, shown.results.clone());
                    let planned = self.plan.iter().position(|p| *p == key);
                    // One loop fills a buffer (two reductions of one value: the first).
                    if let (Some(k), Some(col), false) =
                        (planned, self.col, self.filled.contains(&key))
                    {
                        let xv = self.fresh("x");
                        body.line(format!("const {} {xv} = {x};", types::reg(t)));
                        body.line(format!(
                            "rowbuf{k}[{}] = {xv};",
                            column(&canon.ranges[0].name, col.lo)
                        ));
                        buffer = Some((
                            format!("rowbuf{k}"),
                            types::reg(t).to_string(),
                            col.hi - col.lo + 1,
                        ));
                        x = xv;
                    }
                    if !self.filled.contains(&key) {
                        self.filled.push(key);
                    }
                }
                // A float max or min: XLA's propagates NaN, which OpenMP's `max` clause does
                // not; so the loop takes the plain compare-and-select (which vectorizes) and
                // a separate flag of NaNs seen, and the result is NaN after the loop when one
                // was (issue 28: a scalar loop of selects was most of a short-row softmax).
                let nan_flag = matches!(op, BinOp::Max | BinOp::Min)
                    && (t == ElemType::F32 || t == ElemType::F64);
                // A float sum, max or min over one loop whose extent is a multiple of a
                // vector's lanes (64 bytes): explicit lanes (`rowN_l`, lane k folding columns
                // k, k + L, ..; a max's or min's NaN flags in lanes `rowN_n`) combined by
                // halves at the end. OpenMP's `+` clause leaves the combining to the
                // compiler, and gcc adds the lanes one after another: 16 dependent adds
                // ending each row, most of a softmax of 32-wide rows once exp was fast (issue
                // 28); the NaN flag's `|` clause combined them one at a time too (4 % of that
                // softmax). The order is then the same whatever the compiler vectorizes.
                let lanes: i64 = match (op, t) {
                    (BinOp::Add | BinOp::Max | BinOp::Min, ElemType::F32) => 16,
                    (BinOp::Add | BinOp::Max | BinOp::Min, ElemType::F64) => 8,
                    _ => 0,
                };
                let extent = canon.ranges[0].bounds.hi - canon.ranges[0].bounds.lo + 1;
                let lanes = if n_new == 1 && lanes > 0 && extent % lanes == 0 {
                    lanes
                } else {
                    0
                };
                let cmp = if *op == BinOp::Max { ">" } else { "<" };
                if nan_flag {
                    let xv = self.fresh("x");
                    body.line(format!("const {} {xv} = {x};", types::reg(t)));
                    if lanes > 0 {
                        let l = format!("{acc}_l[lane]");
                        body.line(format!("{l} = {xv} {cmp} {l} ? {xv} : {l};"));
                        body.line(format!("{acc}_n[lane] |= {xv} != {xv};"));
                    } else {
                        body.line(format!("{acc} = {xv} {cmp} {acc} ? {xv} : {acc};"));
                        body.line(format!("{acc}_nan |= {xv} != {xv};"));
                    }
                } else if lanes > 0 {
                    let l = format!("{acc}_l[lane]");
                    body.line(format!("{l} = {};", types::binary(*op, t, &l, &x)));
                } else {
                    body.line(format!("{acc} = {};", types::binary(*op, t, &acc, &x)));
                }
                lines.push(format!(
                    "{}{} {acc} = {};",
                    pad(2),
                    types::reg(t),
                    types::constant(*init, t)
                ));
                if nan_flag {
                    lines.push(format!("{}int {acc}_nan = 0;", pad(2)));
                }
                lines.push(format!("{}// reduce {} over {shown}", pad(2), f.name));
                // Lanes combine with the plain operator at the end: only where that is the
                // type's own (not for 16-bit floats, rounded after each step, nor for
                // integer sums, which wrap).
                let plain = t == ElemType::F32 || t == ElemType::F64;
                let clause = match op {
                    _ if !plain && !matches!(op, BinOp::Max | BinOp::Min) => None,
                    // OpenMP's max and min combine the lanes without regard to NaN; XLA's
                    // float max and min propagate it: the NaN flag above does.
                    BinOp::Max if nan_flag => Some(format!("max:{acc}) reduction(|:{acc}_nan")),
                    BinOp::Min if nan_flag => Some(format!("min:{acc}) reduction(|:{acc}_nan")),
                    BinOp::Max | BinOp::Min if t.is_float() => None,
                    BinOp::Add => Some(format!("+:{acc}")),
                    BinOp::Mul => Some(format!("*:{acc}")),
                    BinOp::Max => Some(format!("max:{acc}")),
                    BinOp::Min => Some(format!("min:{acc}")),
                    _ => None,
                };
                // Combines lanes `a` and `b` (C lvalues) into `a`.
                let fold = |a: &str, b: &str| -> String {
                    if nan_flag {
                        format!("{a} = {b} {cmp} {a} ? {b} : {a};")
                    } else {
                        format!("{a} = {};", types::binary(*op, t, a, b))
                    }
                };
                if lanes > 0 {
                    let (v, ty) = (&canon.ranges[0], types::reg(t));
                    lines.push(format!("{}{ty} {acc}_l[{lanes}];", pad(2)));
                    // A sum's lanes start at -0 (adding it changes nothing, -0 included),
                    // the initial value added once at the end; a max's or min's at the
                    // initial value.
                    let start = if nan_flag {
                        acc.clone()
                    } else if t == ElemType::F32 {
                        "-0.0f".to_string()
                    } else {
                        "-0.0".to_string()
                    };
                    if nan_flag {
                        lines.push(format!("{}int {acc}_n[{lanes}];", pad(2)));
                        lines.push(format!(
                            "{}for (int lane = 0; lane < {lanes}; ++lane) {{ {acc}_l[lane] = {start}; {acc}_n[lane] = 0; }}",
                            pad(2)
                        ));
                    } else {
                        lines.push(format!(
                            "{}for (int lane = 0; lane < {lanes}; ++lane) {acc}_l[lane] = {start};",
                            pad(2)
                        ));
                    }
                    lines.push(format!(
                        "{}for (int64_t {n}b = {lo}; {n}b <= {hi}; {n}b += {lanes}) {{",
                        pad(2),
                        n = v.name,
                        lo = v.bounds.lo,
                        hi = v.bounds.hi,
                    ));
                    // The row's first loop over its columns fetches the next row's inputs.
                    if let (Some(rb), true) = (self.next_row, self.hoisted.is_empty()) {
                        let left = &mut self.prefetch_left;
                        for l in next_row_prefetch(self.spec, &loads, rb, lanes, left)? {
                            lines.push(format!("{}{l}", pad(3)));
                            self.prefetched = true;
                        }
                    }
                    lines.push(format!("{}#pragma omp simd", pad(3)));
                    lines.push(format!(
                        "{}for (int lane = 0; lane < {lanes}; ++lane) {{",
                        pad(3)
                    ));
                    lines.push(format!(
                        "{}const int64_t {n} = {n}b + lane;",
                        pad(4),
                        n = v.name
                    ));
                    lines.extend(body.lines.iter().map(|l| format!("  {l}")));
                    lines.push(format!("{}}}", pad(3)));
                    lines.push(format!("{}}}", pad(2)));
                    // Each level a loop of its own under `omp simd`: without it gcc
                    // combines the levels inside a row loop one lane at a time.
                    let mut h = lanes / 2;
                    while h >= 1 {
                        let (a, b) = (format!("{acc}_l[lane]"), format!("{acc}_l[lane + {h}]"));
                        let mut step = fold(&a, &b);
                        if nan_flag {
                            step = format!("{{ {step} {acc}_n[lane] |= {acc}_n[lane + {h}]; }}");
                        }
                        if h >= 2 {
                            lines.push(format!("{}#pragma omp simd", pad(2)));
                            lines.push(format!(
                                "{}for (int lane = 0; lane < {h}; ++lane) {step}",
                                pad(2)
                            ));
                        } else {
                            lines.push(format!(
                                "{}{}",
                                pad(2),
                                step.replace("[lane + 1]", "[1]").replace("[lane]", "[0]")
                            ));
                        }
                        h /= 2;
                    }
                    if nan_flag {
                        lines.push(format!("{}{acc} = {acc}_l[0];", pad(2)));
                        lines.push(format!("{}{acc}_nan = {acc}_n[0];", pad(2)));
                    } else {
                        lines.push(format!(
                            "{}{acc} = {};",
                            pad(2),
                            types::binary(*op, t, &acc, &format!("{acc}_l[0]"))
                        ));
                    }
                }
                for (k, v) in canon.ranges.iter().enumerate().filter(|_| lanes == 0) {
                    if k + 1 == n_new {
                        if let Some(cl) = &clause {
                            lines.push(format!("{}#pragma omp simd reduction({cl})", pad(2 + k)));
                        }
                    }
                    lines.push(format!(
                        "{}for (int64_t {n} = {lo}; {n} <= {hi}; ++{n}) {{",
                        pad(2 + k),
                        n = v.name,
                        lo = v.bounds.lo,
                        hi = v.bounds.hi,
                    ));
                }
                if lanes == 0 {
                    lines.extend(body.lines);
                    for k in (0..n_new).rev() {
                        lines.push(format!("{}}}", pad(2 + k)));
                    }
                }
                if nan_flag {
                    lines.push(format!("{}if ({acc}_nan) {acc} = NAN;", pad(2)));
                }
                self.hoisted.push(Hoisted {
                    lines,
                    acc: acc.clone(),
                    ty: types::reg(t).to_string(),
                    buffer,
                });
                self.done.push((key, acc.clone()));
                acc
            }
        })
    }
}

/// [`Rows::expr_t`]'s operands, at one row.
struct AtRow<'r, 'a, 'w, 'c> {
    rows: &'r mut Rows<'a>,
    w: &'r mut BodyWriter<'w>,
    ctx: &'c IndexingMap,
}

impl ScalarWriter for AtRow<'_, '_, '_, '_> {
    fn spec(&self) -> &KernelSpec {
        self.rows.spec
    }
    fn operand(&mut self, b: &Body, want: ElemType) -> Result<String, MapError> {
        self.rows.expr_t(self.w, b, self.ctx, want)
    }
    fn register(&mut self) -> String {
        self.rows.fresh("v")
    }
    fn statement(&mut self, s: String) {
        self.w.line(s)
    }
    /// f32 `exp` through [`C_EXPF`].
    fn unary(&self, op: UnOp, t: ElemType, x: &str) -> Result<String, MapError> {
        if op == UnOp::Exp && t == ElemType::F32 {
            Ok(format!("ix_expf({x})"))
        } else {
            types::unary(op, t, x)
        }
    }
}

/// The side outputs of a multi-output reduction (in the reduced operand's shape), each in a
/// loop of its own over its elements in physical order: on the CPU the reduction is a loop
/// inside each output element, so there is no shared pass to write them from.
fn side_output_loops(spec: &KernelSpec, naive: bool, params: &str) -> Result<String, MapError> {
    let mut src = String::new();
    for (n, o) in spec.more_outputs.iter().enumerate() {
        if !o.is_side_of_reduction() {
            continue;
        }
        let lm = loop_map(&o.tensor)?;
        let mut w = BodyWriter::new(spec, naive, 2);
        w.line(format!("// out{} ({}) index: {lm}", n + 1, o.tensor.name));
        super::store_more_output(&mut w, n, &lm, params)?;
        let count = o.tensor.num_elements()?;
        src += &parallel_for(&[count], 1, 1, count);
        src += &format!("  for (int64_t i = 0; i <= {}; ++i) {{\n", count - 1);
        for l in &w.lines {
            src += l;
            src += "\n";
        }
        src += "  }\n";
    }
    Ok(src)
}

/// C for the host compiler: loops over the tiles (in the output's physical order), then over
/// the elements of a tile, computing each output element through the fusion's maps.
pub fn emit_tiled(spec: &KernelSpec, sizes: &[i64]) -> Result<Emitted, MapError> {
    emit_tiled_with(spec, sizes, false)
}

/// [`emit_tiled`], with the maps as written (`naive`) or simplified.
pub fn emit_tiled_with(spec: &KernelSpec, sizes: &[i64], naive: bool) -> Result<Emitted, MapError> {
    spec.single_output("a CPU tiling")?;
    let out = &spec.output;
    if sizes.len() != out.rank()
        || sizes
            .iter()
            .zip(&out.dims)
            .any(|(&z, &n)| z < 1 || n % z != 0)
    {
        return Err(MapError::Other(
            "tile sizes must divide the output's extents".into(),
        ));
    }
    let name = format!(
        "{}_tiled{}",
        c_ident(&spec.name),
        if naive { "_naive" } else { "" }
    );
    let ty = out.elem.c_name();
    let rank = out.rank();
    // ctx: (tile0.., el0..) -> (tile_i * size_i + el_i)
    let mut vars = Vec::new();
    for (i, (&n, &z)) in out.dims.iter().zip(sizes).enumerate() {
        vars.push(Variable::new(format!("tile{i}"), 0, n / z - 1));
    }
    for (i, &z) in sizes.iter().enumerate() {
        vars.push(Variable::new(format!("el{i}"), 0, z - 1));
    }
    let results: Vec<Expr> = (0..rank)
        .map(|i| {
            Expr::var(i as u32)
                .mul(Expr::constant(sizes[i]))
                .add(Expr::var((rank + i) as u32))
        })
        .collect();
    let ctx = IndexingMap::new(vars, vec![], vec![], results, vec![]);
    let params: String = (0..spec.inputs.len())
        .map(|k| format!("p{k}"))
        .collect::<Vec<_>>()
        .join(", ");
    let phys = out.physical_dims();
    let depth = 2 * rank;
    let mut w = BodyWriter::new(spec, naive, depth + 1);
    w.memo = true;
    let v = w.body(&spec.functions[0].body, &ctx, &params)?;
    let k = w.offset(
        &ctx,
        &IndexingMap::identity(&out.dims),
        &out.strides()?,
        "out",
    )?;
    w.line(format!(
        "out[{k}] = {};",
        crate::gpu::emit::types::store(out.elem, &v, false)
    ));

    let mut src = format!(
        "// {} for the CPU{}, tiled {}: {} = {}.\n#include <stdint.h>\n#include <math.h>\n\n",
        spec.name,
        if naive { " (naive indexing)" } else { "" },
        sizes
            .iter()
            .map(|z| z.to_string())
            .collect::<Vec<_>>()
            .join("x"),
        out.name,
        out.shape_text()
    );
    src += &prelude(spec, naive)?;
    let mut decl = input_params(spec, "restrict");
    decl.push(format!("{ty} *restrict out"));
    src += &format!("static void {name}_body({}) {{\n", decl.join(", "));
    let mut level = 1;
    let tiles: Vec<i64> = phys.iter().map(|&d| out.dims[d] / sizes[d]).collect();
    src += &parallel_for(&tiles, rank, 1, out.num_elements()?);
    for (prefix, extent) in [("tile", true), ("el", false)] {
        for &d in &phys {
            let n = if extent {
                out.dims[d] / sizes[d]
            } else {
                sizes[d]
            };
            src += &format!(
                "{}for (int64_t {prefix}{d} = 0; {prefix}{d} < {n}; ++{prefix}{d}) {{\n",
                "  ".repeat(level)
            );
            level += 1;
        }
    }
    for l in &w.lines {
        src += l;
        src += "\n";
    }
    for l in (1..=depth).rev() {
        src += &format!("{}}}\n", "  ".repeat(l));
    }
    src += "}\n\n";
    src += &entry_point(spec, &name, &ty);
    Ok(Emitted {
        name: spec.name.clone(),
        target: Target::Cpu,
        source: crate::gpu::emit::finish_types(crate::gpu::emit::finish_epoch(src)),
        entry: name,
    })
}

/// Whether `spec` is one column reduction at the root (one output; the reduced operand's
/// last dimension kept), the kernel [`emit_column`] writes.
pub fn is_column_reduction(spec: &KernelSpec) -> bool {
    let Some((rmap, _)) = spec.root_reduction() else {
        return false;
    };
    let nd = rmap.dims.len() as u32;
    spec.root == crate::gpu::spec::Root::Elementwise
        && spec.more_outputs.is_empty()
        && rmap
            .results
            .last()
            .and_then(|e| e.as_var())
            .is_some_and(|v| v < nd)
}

/// A column reduction for the CPU reading `vector` adjacent columns at each step, as XLA's
/// vectorized column reduction does per thread: the output in its physical order, `vector`
/// elements at a time (`i0`), each with its accumulator; the reduced elements in order
/// (the reduction's range variables), and at each the `vector` adjacent columns of one row
/// folded into their accumulators (`i = i0 + k`), so the reads walk each row of the operand
/// `vector` elements at a time instead of down a column.
pub fn emit_column(spec: &KernelSpec, naive: bool, vector: i64) -> Result<Emitted, MapError> {
    super::refuse_empty(spec)?;
    super::refuse_opaque(spec)?;
    if !is_column_reduction(spec) {
        return Err(MapError::Other(format!(
            "{} is not one column reduction: vector= on the CPU reads adjacent columns of a column reduction",
            spec.name
        )));
    }
    if !(1..=16).contains(&vector) {
        return Err(MapError::Other(format!(
            "vector={vector} is not in [1, 16]"
        )));
    }
    let (rmap, callee) = spec
        .root_reduction()
        .ok_or_else(|| MapError::Other(format!("{} is not a reduction", spec.name)))?;
    let (root, convert_to) = match spec.functions.first().map(|f| &f.body) {
        Some(Body::Convert(to, r)) => (Some(&**r), Some(*to)),
        r => (r, None),
    };
    let Some(Body::Reduce { op, init, .. }) = root else {
        return Err(MapError::Other(
            "a column reduction needs a reduction at the root".into(),
        ));
    };
    let name = c_ident(&spec.name);
    let out = &spec.output;
    let n = out.num_elements()?;
    let red = spec.function_elem(callee);
    let ty = types::reg(red);
    let lm = loop_map(out)?;
    let composed = crate::map::compose(&lm, rmap)?;
    let m = if naive {
        composed
    } else {
        crate::simplify::simplify(&composed, &Default::default()).map
    };
    let params: String = (0..spec.inputs.len())
        .map(|k| format!("p{k}"))
        .collect::<Vec<_>>()
        .join(", ");
    let names = m.names();
    let bounds = m.bounds();
    let args: Vec<String> = m
        .results
        .iter()
        .map(|&r| super::c_expr(r, &names, &bounds))
        .collect();
    let mut src = format!(
        "// {} for the CPU: {} = {}, a column reduction reading {vector} adjacent column{} per step; index arithmetic {}.\n",
        spec.name,
        out.name,
        out.shape_text(),
        if vector == 1 { "" } else { "s" },
        if naive {
            "naive (the maps composed, not simplified)"
        } else {
            "from the simplified maps"
        }
    );
    src += "#include <stdint.h>\n#include <math.h>\n\n";
    src += &prelude(spec, naive)?;
    let mut decl = input_params(spec, "restrict");
    decl.extend(super::output_params(spec, "restrict"));
    src += &format!("static void {name}_body({}) {{\n", decl.join(", "));
    let groups = (n + vector - 1) / vector;
    src += &parallel_for(&[groups], 1, 1, n);
    src += &format!(
        "  for (int64_t i0 = 0; i0 <= {}; i0 += {vector}) {{\n",
        n - 1
    );
    src += &format!("    // reduced element at output index i = i0 + k: {m}\n");
    src += &format!("    {ty} acc[{vector}];\n");
    src += &format!(
        "    for (int64_t k = 0; k < {vector}; ++k) acc[k] = {};\n",
        types::constant(*init, red)
    );
    let mut pad = "    ".to_string();
    for v in &m.ranges {
        src += &format!(
            "{pad}for (int64_t {0} = {1}; {0} <= {2}; ++{0}) {{\n",
            v.name, v.bounds.lo, v.bounds.hi
        );
        pad += "  ";
    }
    src += &format!("{pad}for (int64_t k = 0; k < {vector}; ++k) {{\n");
    src += &format!("{pad}  const int64_t i = i0 + k;\n");
    src += &format!("{pad}  if (i > {}) break;\n", n - 1);
    for &(e, iv) in &m.constraints {
        if let Some(cond) = super::outside(e, iv, &names, &bounds) {
            src += &format!("{pad}  if ({cond}) continue;\n");
        }
    }
    let call = format!(
        "f{callee}({params}{}{})",
        if args.is_empty() { "" } else { ", " },
        args.join(", ")
    );
    src += &format!(
        "{pad}  acc[k] = {};\n",
        types::binary(*op, red, "acc[k]", &call)
    );
    src += &format!("{pad}}}\n");
    for _ in &m.ranges {
        pad.truncate(pad.len() - 2);
        src += &format!("{pad}}}\n");
    }
    // The output walks its physical order, so output index i is at offset i.
    src += &format!("    for (int64_t k = 0; k < {vector}; ++k) {{\n");
    src += &format!("      if (i0 + k > {}) break;\n", n - 1);
    let v = match convert_to {
        Some(to) => types::convert(red, to, "acc[k]"),
        None => "acc[k]".to_string(),
    };
    src += &format!(
        "      out[i0 + k] = {};\n",
        types::store(out.elem, &v, false)
    );
    src += "    }\n  }\n}\n\n";
    src += &entry_point(spec, &name, out.elem.c_name());
    Ok(Emitted {
        name: spec.name.clone(),
        target: Target::Cpu,
        source: super::finish_types(crate::gpu::emit::finish_epoch(src)),
        entry: name,
    })
}
