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

use super::{
    c_expr, c_ident, helper_functions, input_params, simplified, BodyWriter, Emitted, Target,
};
use crate::gpu::launch::{reads_through_tile, Launch, Strategy, TILE};
use crate::gpu::spec::{Body, KernelSpec};
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
    let spec = w.spec;
    for (n, (t, f)) in spec.more_outputs.iter().enumerate() {
        let v = super::function_value(w, *f, ctx, params)?;
        let k = w.offset(
            ctx,
            &IndexingMap::identity(&t.dims),
            &t.strides()?,
            &format!("out{}", n + 1),
        )?;
        w.line(format!("out{}[{k}] = {v};", n + 1));
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
    for v in &m.ranges {
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
    for _ in &m.ranges {
        w.indent -= 1;
        w.line("}");
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
    let name = c_ident(&spec.name);
    let ty = spec.output.elem.c_name();
    let mut src = format!(
        "// {} for CUDA: {} = {}, {} mapping, block {}, grid {}; index arithmetic {}, {}.\n",
        spec.name,
        spec.output.name,
        spec.output.shape_text(),
        launch.strategy.name(),
        launch.block[0],
        launch.grid[0],
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
    for f in helper_functions(
        spec,
        naive,
        "__device__ static ",
        "__restrict__",
        false,
        index_ty,
    )? {
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
    let wm = &launch.write_map;
    let out_strides = spec.output.strides()?;
    let out_id = IndexingMap::identity(&spec.output.dims);
    match &launch.strategy {
        Strategy::Loop => {
            w.line(format!("// thread → output: {wm}"));
            dim_guards(wm, launch, &mut w, "return");
            guards(wm, &mut w, true);
            loops_open(wm, &mut w);
            guards(wm, &mut w, false);
            let ctx = scope(&mut w, wm, naive, "o");
            let v = w.body(&spec.functions[0].body, &ctx, &params)?;
            let k = w.offset(&ctx, &out_id, &out_strides, "out")?;
            w.line(format!("out[{k}] = {v};"));
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
                    w.line(format!("out[{k}] = {v};"));
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
            for k in 0..tiled.len() {
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
            w.line(format!("out[{k}] = {v};"));
            store_more_outputs(&mut w, &ctx, &params)?;
            loops_close(wm, &mut w);
        }
        Strategy::RowReduction | Strategy::ColumnReduction => {
            if !spec.more_outputs.is_empty() {
                return Err(MapError::Other(format!(
                    "{}: multi-output reductions are not emitted",
                    spec.name
                )));
            }
            let Some(Body::Reduce { op, init, func, .. }) = spec.functions.first().map(|f| &f.body)
            else {
                return Err(MapError::Other(
                    "a reduction launch needs a reduction at the root".into(),
                ));
            };
            let rm = &launch.read_map;
            let acc_init = super::c_float(*init, spec.output.elem);
            w.line(format!("{ty} acc = {acc_init};"));
            w.line(format!("// thread → reduced element: {rm}"));
            let nd = rm.dims.len() as u32;
            // Guards on the dims alone hold for the whole warp's row: they may `return` only
            // after the shuffle, so keep them as a flag.
            // Without a loop over the reduced elements, a guard's `continue` needs a loop to
            // leave: one pass of `do { } while (0)` skips this thread's contribution, and the
            // thread still takes part in the warp's shuffle below.
            let one_pass = rm.ranges.is_empty();
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
            let _ = nd;
            let ctx = scope(&mut w, rm, naive, "r");
            let args = {
                let s = simplified(&ctx);
                let m = if naive || s.status != crate::map::Status::Defined {
                    ctx.clone()
                } else {
                    s
                };
                m.results
                    .iter()
                    .map(|&r| c_expr(r, &m.names(), &m.bounds()))
                    .collect::<Vec<_>>()
            };
            let call = format!(
                "f{func}({params}{}{})",
                if args.is_empty() { "" } else { ", " },
                args.join(", ")
            );
            w.line(format!(
                "acc = {};",
                super::c_binary(*op, "acc", &call, spec.output.elem)
            ));
            loops_close(rm, &mut w);
            if one_pass {
                w.indent -= 1;
                w.line("} while (0);");
            }
            if launch.strategy == Strategy::ColumnReduction {
                // The block's 32×32 partial sums, transposed through shared memory (33
                // columns: the column read hits 32 banks): warp w takes column w's sums.
                w.line(format!("__shared__ {ty} tile[{TILE}][{}];", TILE + 1));
                w.line(format!("tile[th_x / {TILE}][th_x % {TILE}] = acc;"));
                w.line("__syncthreads();");
                w.line(format!("acc = tile[th_x % {TILE}][th_x / {TILE}];"));
            }
            if launch.row_threads > 1 {
                // A tree over the row's lanes: lane 0 of each group of `row_threads` ends
                // with the sum of its group (several rows per warp when rows are short).
                w.line(format!(
                    "for (int off = {}; off > 0; off /= 2) {{",
                    launch.row_threads / 2
                ));
                w.line(format!(
                    "  const {ty} other = __shfl_down_sync(0xffffffffu, acc, off);"
                ));
                w.line(format!(
                    "  acc = {};",
                    super::c_binary(*op, "acc", "other", spec.output.elem)
                ));
                w.line("}");
            }
            w.line(format!("// thread → output: {wm}"));
            dim_guards(wm, launch, &mut w, "return");
            guards(wm, &mut w, true);
            let ctx = scope(&mut w, wm, naive, "o");
            let k = w.offset(&ctx, &out_id, &out_strides, "out")?;
            w.line(format!("out[{k}] = acc;"));
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
    for l in prune_unused(body) {
        src += &l;
        src += "\n";
    }
    src += "}\n";
    let mut prelude = String::new();
    if src.contains("INFINITY") || src.contains("NAN") {
        prelude += SPECIALS;
    }
    prelude += &super::used_helpers(&src).replace("static inline", "__device__ static inline");
    if !prelude.is_empty() {
        prelude += "\n";
    }
    src.insert_str(prelude_at, &prelude);
    Ok(Emitted {
        name: spec.name.clone(),
        target: Target::Cuda,
        source: src,
        entry: name,
    })
}
