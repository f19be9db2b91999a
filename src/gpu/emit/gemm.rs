//! GEMM kernels for dot fusions ([`GemmSpec`]): CUDA C with shared-memory staging, and C
//! for the host compiler.
//!
//! **CUDA.** One block per `bm × bn` output tile (`blockIdx.x`, row-major over the tiles)
//! and batch element (`blockIdx.y`). The contraction runs in steps of `bk`: the block's
//! threads load the `bm × bk` tile of A and the `bk × bn` tile of B into shared memory —
//! each element through its operand's prologue (the fused broadcast, convert, multiply...,
//! written from the simplified maps by [`BodyWriter`]), zero past the edges — stored
//! K-major as `f32` (rows padded to an odd length so column stores hit distinct banks);
//! the loads run along K when K is the operand's minor dimension, else along M or N, so a
//! warp reads contiguous memory either way. Each thread then accumulates a `tm × tn`
//! micro-tile in `f32` registers (rows `ty + i·TY`, columns `tx + j·TX`) from registers
//! loaded out of the tiles — in fours, one 128-bit shared load each, when the micro-tile's
//! sides are multiples of 4 ([`Split::vector_shared_loads`](crate::gpu::gemm::Split)).
//! With `stages = 2` the next step's elements are loaded (through the prologue) into
//! registers before this step's products and stored to the other buffer after them, so the
//! global loads are in flight while the block multiplies; with `stages = S > 2`, `S`
//! buffers rotate: the loads of step `t + S − 1` are issued before the products of step
//! `t`. One barrier per step. At the
//! end each thread rounds its sums to the dot's type, applies the epilogue (elementwise;
//! the dot's value replaces its load) and stores inside the output's bounds.
//!
//! **CPU.** The prologues are evaluated once into packed `f32` panels (`A[b][m][k]`,
//! `B[b][k][n]`), the product accumulates in `f32` over blocks of `bm` rows (at least 64)
//! split across threads by OpenMP, cache blocks of at least 128 × 512 along K and N inside
//! (the innermost loop runs along a row of B and of C, which the compiler vectorizes), then
//! the epilogue writes the output.

use super::{c_ident, mentions_word, types, used_helpers, BodyWriter, Emitted, Target};
use crate::gpu::gemm::{ceil_div, operand_map, output_map, GemmSpec, Split, Tiling};
use crate::gpu::spec::{ElemType, KernelSpec};
use crate::map::IndexingMap;
use crate::MapError;

/// What both emitters need besides the spec.
#[derive(Copy, Clone, Debug)]
pub struct Config {
    pub tiling: Tiling,
    pub split: Split,
    pub naive: bool,
}

/// Calls of the spec's helper functions `fN(` renamed `{prefix}fN(`: the lhs, rhs and
/// epilogue each have their own `f1`.
fn rename(src: &str, prefix: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len() + 16);
    let mut i = 0;
    while i < b.len() {
        let starts = b[i] == b'f'
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
            && {
                let mut j = i + 1;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
                j > i + 1 && j < b.len() && b[j] == b'('
            };
        if starts {
            out.push_str(prefix);
        }
        // Copy one UTF-8 character.
        let ch = src[i..].chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8().max(1);
    }
    out
}

fn params_of(n: usize) -> String {
    (0..n)
        .map(|k| format!("p{k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The helper functions of one part (its partitions but the root), renamed.
fn helpers(
    spec: &KernelSpec,
    prefix: &str,
    cuda: bool,
    naive: bool,
    index_ty: &'static str,
) -> Result<String, MapError> {
    let (q, r) = if cuda {
        ("__device__ static ", "__restrict__")
    } else {
        ("static ", "restrict")
    };
    let mut s = String::new();
    for f in super::helper_functions(spec, naive, q, r, false, index_ty)? {
        s += &rename(&f, prefix);
        s.push('\n');
    }
    Ok(s)
}

/// The statements and the C expression of `spec`'s root at the index `ctx` gives, at
/// `indent`; `replaced` loads stand for values in scope (the dot's, in the epilogue).
#[allow(clippy::too_many_arguments)]
fn value(
    spec: &KernelSpec,
    prefix: &str,
    ctx: &IndexingMap,
    cuda: bool,
    naive: bool,
    index_ty: &'static str,
    indent: usize,
    replaced: Vec<(usize, IndexingMap, String)>,
) -> Result<(Vec<String>, String), MapError> {
    let mut w = BodyWriter::new(spec, naive, indent);
    w.cuda = cuda;
    w.index_ty = index_ty;
    w.replaced = replaced;
    let params = params_of(spec.inputs.len());
    let root = spec
        .functions
        .first()
        .ok_or_else(|| MapError::Other(format!("{}: no function", spec.name)))?;
    let e = w.body(&root.body, ctx, &params)?;
    Ok((
        w.lines.iter().map(|l| rename(l, prefix)).collect(),
        rename(&e, prefix),
    ))
}

/// The epilogue's statements and value for the dot's value `dv` (a register of the dot's
/// type) at `(bz, gm, gn)`, and the output offset's statements and expression.
fn epilogue(
    g: &GemmSpec,
    cuda: bool,
    naive: bool,
    index_ty: &'static str,
    indent: usize,
) -> Result<(Vec<String>, String, String), MapError> {
    let ctx = output_map(g);
    let (mut lines, v) = match &g.epilogue {
        None => (vec![], "dv".to_string()),
        Some(e) => value(
            e,
            "e_",
            &ctx,
            cuda,
            naive,
            index_ty,
            indent,
            g.acc_loads()
                .into_iter()
                .map(|m| (g.inputs.len(), m, "dv".to_string()))
                .collect(),
        )?,
    };
    // The output offset, with a writer of the output's spec (any will do: only the maps).
    let spec = g.epilogue.as_ref().unwrap_or(&g.lhs.spec);
    let mut w = BodyWriter::new(spec, naive, indent);
    w.index_ty = index_ty;
    w.cuda = cuda;
    let k = w.offset(
        &ctx,
        &IndexingMap::identity(&g.output.dims),
        &g.output.strides()?,
        "out",
    )?;
    lines.append(&mut w.lines);
    // BodyWriter names its offsets k1, k2..: the epilogue's writer may have used k1 too.
    let (lines, k) = unclash(lines, k);
    Ok((lines, v, k))
}

/// The second writer's `kN` renamed `ko` (the first writer numbered its own from 1 too).
fn unclash(mut lines: Vec<String>, k: String) -> (Vec<String>, String) {
    if let Some(last) = lines.last_mut() {
        let decl = format!(" {k} = ");
        if last.contains(&decl) {
            *last = last.replacen(&decl, " ko = ", 1);
            return (lines, "ko".into());
        }
    }
    (lines, k)
}

/// The index type name and whether the shapes fit 32-bit indices.
fn index_type(g: &GemmSpec, wide: bool) -> &'static str {
    let fits = |t: &crate::gpu::spec::Tensor| t.num_elements().is_ok_and(|n| n <= i32::MAX as i64);
    let all = g
        .inputs
        .iter()
        .chain([&g.output, &g.dot, &g.lhs.spec.output, &g.rhs.spec.output])
        .all(fits);
    // m0 + bm, k0 + bk and n0 + bn must fit as well.
    let ext = [g.m, g.n, g.k, g.b]
        .iter()
        .all(|&x| x.saturating_add(1024) <= i32::MAX as i64);
    if all && ext && !wide {
        "int"
    } else {
        "int64_t"
    }
}

fn header_comment(g: &GemmSpec, c: &Config, target: &str, index_ty: &str) -> String {
    let t = &c.tiling;
    let s = &c.split;
    let side = |o: &crate::gpu::gemm::Operand, free: &str| {
        if o.k_minor {
            "K-fastest".to_string()
        } else {
            format!("{free}-fastest")
        }
    };
    format!(
        "// {} for {target}: GEMM {} = {}, {}; {} ({} threads as {} x {}, {}x{} accumulators each); A tiles loaded {}, B tiles {}; {}{}; index arithmetic {}.\n",
        g.name,
        g.output.name,
        g.output.shape_text(),
        g.shape_text(),
        t.describe(),
        s.threads,
        s.tx,
        s.ty,
        s.tm,
        s.tn,
        side(&g.lhs, "M"),
        side(&g.rhs, "N"),
        if g.epilogue.is_some() {
            "with an epilogue"
        } else {
            "no epilogue"
        },
        if c.naive { ", naive maps" } else { "" },
        if index_ty == "int" {
            "32-bit"
        } else {
            "64-bit"
        }
    )
}

/// Parameter declarations: the inputs, then `out`.
fn decls(g: &GemmSpec, cuda: bool) -> Vec<String> {
    let r = if cuda { "__restrict__" } else { "restrict" };
    let mut d: Vec<String> = g
        .inputs
        .iter()
        .enumerate()
        .map(|(k, t)| format!("const {} *{r} p{k}", types::mem(t.elem, cuda)))
        .collect();
    d.push(format!("{} *{r} out", types::mem(g.output.elem, cuda)));
    d
}

/// The CUDA kernel; its grid is `(tiles_m · tiles_n, batch)` blocks of `threads`.
pub fn cuda(g: &GemmSpec, c: &Config) -> Result<(Emitted, u32), MapError> {
    cuda_width(g, c, false)
}

/// [`cuda`], with 64-bit indices forced when `wide`.
pub fn cuda_width(g: &GemmSpec, c: &Config, wide: bool) -> Result<(Emitted, u32), MapError> {
    g.check_sizes(&c.tiling)?;
    super::index_width_reset();
    let it = index_type(g, wide);
    let e = cuda_with(g, c, it)?;
    if it == "int" && super::index_width_fits_32() {
        return Ok((e, 32));
    }
    Ok((cuda_with(g, c, "int64_t")?, 64))
}

fn cuda_with(g: &GemmSpec, c: &Config, it: &'static str) -> Result<Emitted, MapError> {
    let t = &c.tiling;
    let sp = &c.split;
    let mut name = c_ident(&g.name);
    if ["half", "half2", "nv_bfloat16", "nv_bfloat162"].contains(&name.as_str()) {
        name += "_kernel";
    }
    // 128-bit shared loads where every thread's rows and columns come in fours.
    let vec = sp.vector_shared_loads();
    let (pa, pb) = (t.bm + Tiling::pad(t.bm, vec), t.bn + Tiling::pad(t.bn, vec));
    let (_, tiles_n) = g.tiles(t);
    let steps = ceil_div(g.k, t.bk);
    let nt = sp.threads;
    let n_in = g.inputs.len();
    let params = params_of(n_in);
    let mut src = header_comment(g, c, "CUDA", it);
    src += "typedef long long int64_t;\ntypedef int int32_t;\n\n";
    let prelude_at = src.len();
    let mut body = String::new();
    body += &helpers(&g.lhs.spec, "a_", true, c.naive, it)?;
    body += &helpers(&g.rhs.spec, "b_", true, c.naive, it)?;
    let mut in_decl = decls(g, true);
    in_decl.pop();
    // The two tile loaders.
    for (lhs, letter, free, fname, fext, row) in [
        (true, "a", "gm", "m0", g.m, pa),
        (false, "b", "gn", "n0", g.n, pb),
    ] {
        let op = if lhs { &g.lhs } else { &g.rhs };
        let fb = if lhs { t.bm } else { t.bn };
        let ctx = operand_map(g, lhs);
        let (lines, v) = value(
            &op.spec,
            &format!("{letter}_"),
            &ctx,
            true,
            c.naive,
            it,
            3,
            vec![],
        )?;
        let reg = types::reg(op.spec.output.elem);
        body += &format!(
            "// The {}x{} tile of {} at ({}), K-major in shared memory, through its prologue; zero past the edges.\n",
            if lhs { t.bm } else { t.bk },
            if lhs { t.bk } else { t.bn },
            if lhs { "A" } else { "B" },
            if lhs { "m0, k0" } else { "k0, n0" },
        );
        let split_kk = if op.k_minor {
            format!("const int f = e / {}, kk = e % {};", t.bk, t.bk)
        } else {
            format!("const int f = e % {fb}, kk = e / {fb};")
        };
        let elems = fb * t.bk;
        // One element of the tile at (f, kk) through the prologue into `v`, zero past the
        // edges (and past the tile's elements where `e` may run over them).
        let element = |extra: &str| {
            let mut b = format!("    const {it} {free} = {fname} + f, gk = k0 + kk;\n");
            b += "    float v = 0.0f;\n";
            b += &format!("    if ({extra}{free} < {fext} && gk < {}) {{\n", g.k);
            for l in &lines {
                b += l;
                b.push('\n');
            }
            b += &format!("      v = ({reg})({v});\n    }}\n");
            b
        };
        if t.stages == 2 {
            // Two stages through registers: `fetch` issues the global loads (and the
            // prologue) of the next step into registers before the products of this one,
            // `put` stores them to the other buffer after.
            let per = ceil_div(elems, nt);
            // The last of a thread's `per` elements may be past the tile.
            let past = elems % nt != 0;
            let (guard, inside) = if past {
                (format!("if (e < {elems}) "), format!("e < {elems} && "))
            } else {
                (String::new(), String::new())
            };
            body += &format!(
                "__device__ static void {name}_fetch_{letter}({}, float *stage_regs, const {it} bz, const {it} {fname}, const {it} k0) {{\n",
                in_decl.join(", ")
            );
            body += &format!(
                "  #pragma unroll\n  for (int i = 0; i < {per}; ++i) {{\n    const int e = threadIdx.x + i * {nt};\n    {split_kk}\n"
            );
            body += &element(&inside);
            body += "    stage_regs[i] = v;\n  }\n}\n\n";
            body += &format!(
                "__device__ static void {name}_put_{letter}(float (*s)[{row}], const float *stage_regs) {{\n  #pragma unroll\n  for (int i = 0; i < {per}; ++i) {{\n    const int e = threadIdx.x + i * {nt};\n    {guard}{{ {split_kk} s[kk][f] = stage_regs[i]; }}\n  }}\n}}\n\n"
            );
            continue;
        }
        body += &format!(
            "__device__ static void {name}_load_{letter}({}, float (*s)[{row}], const {it} bz, const {it} {fname}, const {it} k0) {{\n",
            in_decl.join(", ")
        );
        body += &format!("  for (int e = threadIdx.x; e < {elems}; e += {nt}) {{\n");
        body += &format!("    {split_kk}\n");
        body += &element("");
        body += "    s[kk][f] = v;\n  }\n}\n\n";
    }
    if let Some(e) = &g.epilogue {
        body += &helpers(e, "e_", true, c.naive, it)?;
    }
    let (elines, ev, ek) = epilogue(g, true, c.naive, it, 3)?;
    body += &format!(
        "extern \"C\" __global__ void __launch_bounds__({nt}) {name}({}) {{\n",
        decls(g, true).join(", ")
    );
    let align = if vec { "__align__(16) " } else { "" };
    body += &format!(
        "  __shared__ {align}float sa[{}][{}][{pa}];\n",
        t.stages, t.bk
    );
    body += &format!(
        "  __shared__ {align}float sb[{}][{}][{pb}];\n",
        t.stages, t.bk
    );
    body += &format!(
        "  const int tx = threadIdx.x % {}, ty = threadIdx.x / {};\n",
        sp.tx, sp.tx
    );
    body += &format!("  const {it} bz = blockIdx.y;\n");
    body += &format!(
        "  const {it} m0 = ({it})(blockIdx.x / {tiles_n}) * {}, n0 = ({it})(blockIdx.x % {tiles_n}) * {};\n",
        t.bm, t.bn
    );
    body += &format!(
        "  float acc[{}][{}];\n  #pragma unroll\n  for (int i = 0; i < {}; ++i)\n    #pragma unroll\n    for (int j = 0; j < {}; ++j) acc[i][j] = 0.0f;\n",
        sp.tm, sp.tn, sp.tm, sp.tn
    );
    let load = |buf: &str, k0: &str| {
        format!(
            "{name}_load_a({params}, sa[{buf}], bz, m0, {k0}); {name}_load_b({params}, sb[{buf}], bz, n0, {k0});"
        )
    };
    let s = t.stages;
    let (per_a, per_b) = (ceil_div(t.bm * t.bk, nt), ceil_div(t.bn * t.bk, nt));
    let fetch = |k0: &str| {
        format!(
            "{name}_fetch_a({params}, ra_next, bz, m0, {k0}); {name}_fetch_b({params}, rb_next, bz, n0, {k0});"
        )
    };
    let put =
        |buf: &str| format!("{name}_put_a(sa[{buf}], ra_next); {name}_put_b(sb[{buf}], rb_next);");
    if s == 2 {
        body += &format!(
            "  // 2 stages through registers: step t + 1's tiles are loaded into registers before step t's products and stored to the other buffer after them.\n  float ra_next[{per_a}], rb_next[{per_b}];\n"
        );
        body += &format!(
            "  {}\n  {}\n  __syncthreads();\n",
            fetch(&format!("({it})0")),
            put("0")
        );
    } else if s > 1 {
        body += &format!(
            "  // {s} stages: steps 0..{} loaded ahead; step t + {} loads while step t multiplies.\n",
            s - 2,
            s - 1
        );
        body += &format!(
            "  for (int st = 0; st < {} && st < {steps}; ++st) {{ {} }}\n  __syncthreads();\n",
            s - 1,
            load("st", &format!("({it})st * {}", t.bk))
        );
    }
    body += &format!("  for ({it} kt = 0; kt < {steps}; ++kt) {{\n");
    if s == 2 {
        body += "    const int buf = (int)(kt & 1);\n";
        body += &format!(
            "    if (kt + 1 < {steps}) {{ {} }}\n",
            fetch(&format!("(kt + 1) * {}", t.bk))
        );
    } else if s > 1 {
        body += &format!("    const int buf = (int)(kt % {s});\n");
        body += &format!(
            "    if (kt + {} < {steps}) {{ const int nb = (int)((kt + {}) % {s}); {} }}\n",
            s - 1,
            s - 1,
            load("nb", &format!("(kt + {}) * {}", s - 1, t.bk))
        );
    } else {
        body += "    const int buf = 0;\n";
        body += &format!(
            "    {}\n    __syncthreads();\n",
            load("0", &format!("kt * {}", t.bk))
        );
    }
    body += &format!(
        "    #pragma unroll\n    for (int kk = 0; kk < {}; ++kk) {{\n",
        t.bk
    );
    body += &format!("      float ra[{}], rb[{}];\n", sp.tm, sp.tn);
    if vec {
        // Thread (tx, ty)'s rows are ty·4 + (i mod 4) + (i div 4)·4·TY: fours of neighbouring
        // rows, read as one float4 each (the same for columns).
        for (reg, arr, count, id, stride) in [
            ("ra", "sa", sp.tm, "ty", 4 * sp.ty),
            ("rb", "sb", sp.tn, "tx", 4 * sp.tx),
        ] {
            body += &format!(
                "      #pragma unroll\n      for (int c = 0; c < {}; ++c) {{ const float4 q = *reinterpret_cast<const float4 *>(&{arr}[buf][kk][c * {stride} + {id} * 4]); {reg}[4 * c] = q.x; {reg}[4 * c + 1] = q.y; {reg}[4 * c + 2] = q.z; {reg}[4 * c + 3] = q.w; }}\n",
                count / 4
            );
        }
    } else {
        body += &format!(
            "      #pragma unroll\n      for (int i = 0; i < {}; ++i) ra[i] = sa[buf][kk][ty + i * {}];\n",
            sp.tm, sp.ty
        );
        body += &format!(
            "      #pragma unroll\n      for (int j = 0; j < {}; ++j) rb[j] = sb[buf][kk][tx + j * {}];\n",
            sp.tn, sp.tx
        );
    }
    body += &format!(
        "      #pragma unroll\n      for (int i = 0; i < {}; ++i)\n        #pragma unroll\n        for (int j = 0; j < {}; ++j) acc[i][j] += ra[i] * rb[j];\n",
        sp.tm, sp.tn
    );
    body += "    }\n";
    if s == 2 {
        body += &format!("    if (kt + 1 < {steps}) {{ {} }}\n", put("buf ^ 1"));
    }
    body += "    __syncthreads();\n  }\n";
    // Thread `id`'s `k`-th row (column) of the block tile, of `threads` along it: strided,
    // or in fours where the shared loads are 128-bit.
    let micro = |id: &str, k: &str, threads: i64| {
        if vec {
            format!("{id} * 4 + ({k} % 4) + ({k} / 4) * {}", 4 * threads)
        } else {
            format!("{id} + {k} * {threads}")
        }
    };
    body += "  // Each accumulator rounded to the dot's type, through the epilogue, stored.\n";
    body += &format!("  for (int i = 0; i < {}; ++i) {{\n", sp.tm);
    body += &format!(
        "    const {it} gm = m0 + {};\n    if (gm >= {}) break;\n",
        micro("ty", "i", sp.ty),
        g.m
    );
    body += &format!("    for (int j = 0; j < {}; ++j) {{\n", sp.tn);
    body += &format!(
        "      const {it} gn = n0 + {};\n      if (gn >= {}) break;\n",
        micro("tx", "j", sp.tx),
        g.n
    );
    body += &format!(
        "      const float dv = {};\n",
        types::convert(ElemType::F32, g.dot.elem, "acc[i][j]")
    );
    for l in &elines {
        body += l;
        body.push('\n');
    }
    body += &format!(
        "      out[{ek}] = {};\n",
        types::store(g.output.elem, &ev, true)
    );
    body += "    }\n  }\n}\n";
    src += &body;
    // Helpers and headers the text uses, as the elementwise emitter writes them.
    let mut prelude = String::new();
    if src.contains("INFINITY") || src.contains("NAN") {
        prelude += "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n#ifndef NAN\n#define NAN __int_as_float(0x7fffffff)\n#endif\n";
    }
    prelude += &used_helpers(&src).replace("static inline", "__device__ static inline");
    prelude += &types::helpers(&src, true);
    if !prelude.is_empty() {
        prelude += "\n";
    }
    src.insert_str(prelude_at, &prelude);
    let mut head = String::new();
    if src.contains("__half") || src.contains("half_rn") {
        head += "#include <cuda_fp16.h>\n";
    }
    if src.contains("bfloat16") {
        head += "#include <cuda_bf16.h>\n";
    }
    for (ty, def) in [
        ("int8_t", "signed char"),
        ("int16_t", "short"),
        ("uint8_t", "unsigned char"),
        ("uint16_t", "unsigned short"),
        ("uint32_t", "unsigned int"),
        ("uint64_t", "unsigned long long"),
    ] {
        if mentions_word(&src, ty) {
            head += &format!("typedef {def} {ty};\n");
        }
    }
    if !head.is_empty() {
        let at = src.find("typedef long long int64_t;").unwrap_or(0);
        src.insert_str(at, &head);
    }
    Ok(Emitted {
        name: g.name.clone(),
        target: Target::Cuda,
        source: src,
        entry: name,
    })
}

/// The grid and block of [`cuda`]'s kernel: `(tiles, batch)` and the block's threads.
pub fn launch_dims(g: &GemmSpec, t: &Tiling) -> ([i64; 2], i64) {
    let (tm, tn) = g.tiles(t);
    ([tm.saturating_mul(tn), g.b], t.threads())
}

/// The host kernel's cache blocks along K and N (at least): a 128 x 512 block of B is
/// 256 KiB of `f32`, an L2's share.
const CPU_BK: i64 = 128;
const CPU_BN: i64 = 512;
/// Rows of a host thread's block, at least: the GPU's tiles (16 rows for a small GEMM)
/// would re-read each `CPU_BK × CPU_BN` block of B from cache every 16 rows.
const CPU_BM: i64 = 64;

/// Rows of each host thread's block for tiling `t`: its `bm`, at least [`CPU_BM`].
pub fn cpu_rows(t: &Tiling) -> i64 {
    t.bm.max(CPU_BM)
}

/// The host C kernel (`void NAME(void **args)`: the inputs, then the output).
pub fn cpu(g: &GemmSpec, c: &Config) -> Result<Emitted, MapError> {
    g.check_sizes(&c.tiling)?;
    let t = &c.tiling;
    let it = "int64_t";
    let name = c_ident(&g.name);
    let params = params_of(g.inputs.len());
    let mut src = header_comment(g, c, "the CPU", it);
    src += "#include <stdint.h>\n#include <math.h>\n#include <stdlib.h>\n\n";
    let prelude_at = src.len();
    let mut body = String::new();
    body += &helpers(&g.lhs.spec, "a_", false, c.naive, it)?;
    body += &helpers(&g.rhs.spec, "b_", false, c.naive, it)?;
    if let Some(e) = &g.epilogue {
        body += &helpers(e, "e_", false, c.naive, it)?;
    }
    let (b, m, n, k) = (g.b, g.m, g.n, g.k);
    let pa_len = b
        .checked_mul(m)
        .and_then(|x| x.checked_mul(k))
        .ok_or_else(|| MapError::Overflow("the packed A panel".into()))?;
    let pb_len = b
        .checked_mul(k)
        .and_then(|x| x.checked_mul(n))
        .ok_or_else(|| MapError::Overflow("the packed B panel".into()))?;
    let pc_len = b
        .checked_mul(m)
        .and_then(|x| x.checked_mul(n))
        .ok_or_else(|| MapError::Overflow("the accumulators".into()))?;
    body += &format!(
        "static void {name}_body({}) {{\n",
        decls(g, false).join(", ")
    );
    // At least one element each: with K = 0 the panels are empty (the output is the
    // epilogue of zeros), and malloc(0) may return NULL, which reads as out of memory.
    let (pa_len, pb_len) = (pa_len.max(1), pb_len.max(1));
    body += &format!(
        "  float *pa = malloc(sizeof(float) * {pa_len}LL), *pb = malloc(sizeof(float) * {pb_len}LL), *pc = calloc({pc_len}LL, sizeof(float));\n"
    );
    body += "  if (!pa || !pb || !pc) { free(pa); free(pb); free(pc); return; }\n";
    let big = |x: i64| x >= crate::gpu::emit::cpu::PARALLEL_MIN_ELEMENTS;
    let omp = |x: i64, depth: usize| {
        if big(x) {
            format!("  #pragma omp parallel for collapse({depth}) schedule(static)\n")
        } else {
            String::new()
        }
    };
    // The panels: A[b][m][k], B[b][k][n], each element through its prologue, the inner
    // loop along the operand's minor dimension's role.
    for lhs in [true, false] {
        let op = if lhs { &g.lhs } else { &g.rhs };
        let letter = if lhs { "a" } else { "b" };
        let ctx = operand_map(g, lhs);
        let (lines, v) = value(
            &op.spec,
            &format!("{letter}_"),
            &ctx,
            false,
            c.naive,
            it,
            4,
            vec![],
        )?;
        let (fv, fext) = if lhs { ("gm", m) } else { ("gn", n) };
        let (outer, inner) = if op.k_minor {
            ((fv, fext), ("gk", k))
        } else {
            (("gk", k), (fv, fext))
        };
        body += &format!(
            "  // {} through its prologue.\n",
            if lhs { "A[b][m][k]" } else { "B[b][k][n]" }
        );
        body += &omp(pa_len.max(pb_len), 2);
        body += &format!("  for ({it} bz = 0; bz < {b}; ++bz)\n");
        body += &format!(
            "    for ({it} {0} = 0; {0} < {1}; ++{0})\n",
            outer.0, outer.1
        );
        body += &format!(
            "      for ({it} {0} = 0; {0} < {1}; ++{0}) {{\n",
            inner.0, inner.1
        );
        for l in &lines {
            body += l;
            body.push('\n');
        }
        let at = if lhs {
            format!("pa[(bz * {m} + gm) * {k} + gk]")
        } else {
            format!("pb[(bz * {k} + gk) * {n} + gn]")
        };
        body += &format!("        {at} = (float)({v});\n      }}\n");
    }
    // The product, f32 accumulation: blocks of rows (bm, at least CPU_BM) split across threads; inside, K
    // and N in cache blocks of the host's (a GPU tile's bk x bn, 16 x 8, would leave the
    // vectorized row loop 8 long).
    let (cbk, cbn) = (t.bk.max(CPU_BK), t.bn.max(CPU_BN));
    let rows = cpu_rows(t);
    let mb = ceil_div(m, rows);
    body += &format!(
        "  // C += A B in blocks of {rows} rows (one thread each), {cbk} x {cbn} inside.\n"
    );
    body += &omp(pc_len, 2);
    body += &format!("  for ({it} bz = 0; bz < {b}; ++bz)\n");
    body += &format!("    for ({it} mb = 0; mb < {mb}; ++mb)\n");
    body += &format!(
        "      for ({it} k0 = 0; k0 < {k}; k0 += {cbk}) {{\n        const {it} k1 = k0 + {cbk} < {k} ? k0 + {cbk} : {k};\n"
    );
    body += &format!(
        "        for ({it} n0 = 0; n0 < {n}; n0 += {cbn}) {{\n          const {it} n1 = n0 + {cbn} < {n} ? n0 + {cbn} : {n};\n"
    );
    body += &format!(
        "          for ({it} gm = mb * {rows}; gm < {m} && gm < (mb + 1) * {rows}; ++gm) {{\n"
    );
    body += &format!("            float *restrict cr = pc + (bz * {m} + gm) * {n};\n");
    body += &format!("            for ({it} gk = k0; gk < k1; ++gk) {{\n");
    body += &format!(
        "              const float a = pa[(bz * {m} + gm) * {k} + gk];\n              const float *restrict br = pb + (bz * {k} + gk) * {n};\n"
    );
    body += &format!("              for ({it} gn = n0; gn < n1; ++gn) cr[gn] += a * br[gn];\n");
    body += "            }\n          }\n        }\n      }\n";
    let (elines, ev, ek) = epilogue(g, false, c.naive, it, 4)?;
    body += "  // Each sum rounded to the dot's type, through the epilogue, stored.\n";
    body += &omp(pc_len, 2);
    body += &format!("  for ({it} bz = 0; bz < {b}; ++bz)\n");
    body += &format!("    for ({it} gm = 0; gm < {m}; ++gm)\n");
    body += &format!("      for ({it} gn = 0; gn < {n}; ++gn) {{\n");
    body += &format!(
        "        const float dv = {};\n",
        types::convert(
            ElemType::F32,
            g.dot.elem,
            &format!("pc[(bz * {m} + gm) * {n} + gn]")
        )
    );
    for l in &elines {
        body += l;
        body.push('\n');
    }
    body += &format!(
        "        out[{ek}] = {};\n      }}\n",
        types::store(g.output.elem, &ev, false)
    );
    body += "  free(pa); free(pb); free(pc);\n}\n\n";
    let mut casts: Vec<String> = g
        .inputs
        .iter()
        .enumerate()
        .map(|(k, t)| format!("(const {} *)args[{k}]", t.elem.c_name()))
        .collect();
    casts.push(format!(
        "({} *)args[{}]",
        g.output.elem.c_name(),
        g.inputs.len()
    ));
    body += &format!(
        "// entry: args = inputs in order, then the output\nvoid {name}(void **args) {{\n  {name}_body({});\n}}\n",
        casts.join(", ")
    );
    let _ = params;
    src += &body;
    let mut prelude = used_helpers(&src);
    if mentions_word(&src, "bool") {
        prelude.insert_str(0, "#include <stdbool.h>\n");
    }
    prelude += &types::helpers(&src, false);
    if !prelude.is_empty() {
        prelude += "\n";
    }
    src.insert_str(prelude_at, &prelude);
    Ok(Emitted {
        name: g.name.clone(),
        target: Target::Cpu,
        source: src,
        entry: name,
    })
}

#[cfg(test)]
mod tests {
    use super::rename;

    #[test]
    fn helper_calls_are_renamed_and_nothing_else() {
        assert_eq!(
            rename(
                "const float t1 = f1(p0, d0) + f12(p0) + ff1(x) + f1 + fabsf(x);",
                "a_"
            ),
            "const float t1 = a_f1(p0, d0) + a_f12(p0) + ff1(x) + f1 + fabsf(x);"
        );
    }
}
