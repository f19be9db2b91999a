//! CUDA for reductions read inside a body, computed once per row by the row's threads.
//!
//! A softmax reads the row max inside `exp(x - max)` and the row sum of that inside the
//! divide. Written element by element (the loop launch), every element recomputes its row's
//! reductions, and the sum's body recomputes the max for each element it adds: O(row²)
//! work per element. Here (seed 001's row reduction, applied to the reductions of a body):
//!
//! - [`Strategy::RowNormalization`]: the root is elementwise; each row of the output (its
//!   elements but the minor physical dimension) gets `row_threads` lanes (a warp, several
//!   warps for a long row, or fewer lanes for a short row). Every reduction the body reads
//!   whose index depends on the row alone is computed once, before the row's elements, by
//!   the row's lanes together: lane `l` folds elements `l, l + row_threads, ..` of it,
//!   then a butterfly of `__shfl_xor_sync` leaves the warp's value in every lane; with
//!   several warps a row, lane 0 of each puts its warp's value in shared memory and, after
//!   a barrier, every thread of the row folds the row's warps in warp order (deterministic).
//!   Nested reductions come first (the max before the sum of `exp(x - max)`, which reads
//!   the max's register).
//!   Then each lane computes and writes its elements of the row.
//! - Several rows a thread ([`Launch::rows_per_thread`], Triton's blocked layout of XLA's
//!   tile where the fusion reads an operand broadcast along the rows): the row's lanes are
//!   the whole block, and each pass runs over the thread's rows `i` in an unrolled loop,
//!   each declaring its row `r`; the row's values are arrays indexed by `i`, and the
//!   warps' values of all the thread's rows meet in shared memory at one barrier per
//!   reduction. The thread's vector of the broadcast operand is the same for its rows:
//!   NVRTC loads it once.
//! - The row is read from memory once where the passes over it (the reductions', then the
//!   elements') read an input at the same 16-byte vectors: the first pass keeps its vectors
//!   in a register array (`uint4 x1[4]`, indexed by the fully unrolled loop counter), the
//!   later passes take them from there ([`MAX_KEPT_VECTORS`]), as XLA's Triton kernels
//!   keep the row's tile in registers.
//! - A row reduction at the root whose operand reads reductions of its own row (the sum
//!   of `exp(x - max)` as the output): the same warp computes the nested reductions in
//!   order, then the root reduction, and lane 0 writes.
//!
//! Calls are inlined (each function's body written at its index), so the helper functions
//! of the other launches are not emitted. Naive and simplified index arithmetic work as
//! elsewhere ([`BodyWriter`]): the scopes' maps are the same, only their printing differs.

use super::{
    elementwise, outside, simplified, substitute, types, BodyWriter, ScalarWriter, I32_INDEX,
};
use crate::gpu::launch::{Launch, Strategy, WARP};
use crate::gpu::spec::{Body, ElemType, KernelSpec};
use crate::map::IndexingMap;
use crate::MapError;

pub use crate::gpu::rows::applies;
use crate::gpu::rows::canonical;

/// Whether this launch of `spec` is written by this module.
pub fn plan(spec: &KernelSpec, launch: &Launch) -> Result<bool, MapError> {
    Ok(match launch.strategy {
        Strategy::RowNormalization => true,
        Strategy::RowReduction => crate::gpu::rows::row_kernel_reduction(spec, launch)?,
        _ => false,
    })
}

/// The state of one kernel: the row-level lines (the reductions, innermost first) and the
/// reductions written so far, by their map from the row, with the register holding each.
struct Coop<'a> {
    spec: &'a KernelSpec,
    /// A called function's value kept in a register and read again where the same call
    /// recurs in scope ([`KernelSpec::inline_nodes_exceed`]: written in place, its calls would
    /// repeat exponentially).
    share_calls: bool,
    naive: bool,
    index_ty: &'static str,
    params: String,
    row_threads: i64,
    /// The launch's threads a block (the shared memory of a row of several warps).
    block: i64,
    /// The C condition of a row past the output's last (a partly filled last block).
    past_end: Option<String>,
    hoisted: Vec<String>,
    done: Vec<(String, String)>,
    count: usize,
    /// The launch's elements per lane along the row (`unroll_id`): each lane takes `vector`
    /// consecutive elements, read 16 bytes at a time where the type and the map allow.
    vector: i64,
    /// While a loop over `unroll_id` is written: its 16-byte loads, hoisted before it.
    vec: Option<VecLoads>,
    /// The vectors kept in registers across the passes over the row ([`kept_vectors`]).
    kept: Vec<Kept>,
    /// Every pass's 16-byte loads, a key each, in the order the passes are written.
    uses: Vec<RowKey>,
    /// Rows a thread ([`Launch::rows_per_thread`]): above 1, every pass over the row runs
    /// in a loop over the thread's rows `i`, each declaring its row `r` by `row_decl`, and
    /// the row's values are arrays indexed by `i`.
    rows_per_thread: i64,
    row_decl: String,
}

/// `lines` indented by one more level.
fn indented(lines: Vec<String>) -> Vec<String> {
    lines.into_iter().map(|l| format!("  {l}")).collect()
}

/// `body` (at its own indent) inside the unrolled loop over the thread's `per` rows `i`.
fn over_rows(per: i64, body: Vec<String>) -> Vec<String> {
    let mut out = vec![
        "#pragma unroll".to_string(),
        format!("for (int i = 0; i <= {}; ++i) {{", per - 1),
    ];
    out.extend(indented(body));
    out.push("}".into());
    out
}

/// Vectors of 16 bytes a lane keeps in registers for one input's reads of the row (the
/// first pass over the row that reads them loads them, the later passes read the
/// registers): up to 8 (32 registers a lane); over it, each pass reads the row from memory
/// again, as without the budget. All kept inputs together: up to [`MAX_KEPT_TOTAL`]. The
/// array is indexed by the passes' loop counters, constants once the loops are unrolled:
/// with at most 8 steps (under 64) every pass's loop carries `#pragma unroll`, so NVRTC
/// puts the array in registers rather than local memory.
pub const MAX_KEPT_VECTORS: i64 = 8;
/// Vectors of 16 bytes a lane keeps for all inputs together (64 registers a lane), of the
/// 255 a thread may have, so the row kernel keeps its occupancy and does not spill.
pub const MAX_KEPT_TOTAL: i64 = 16;

/// What makes two passes' vector loads the same: the input, the offset at `unroll_id = 0`
/// and the guards that skip a step (with the pass's loop counter, `j` or `col`, renamed
/// alike), the steps and the elements a vector. Equal keys read the same 16 bytes at each
/// step of each lane of each row, under the same conditions: a later pass may take the
/// first pass's register for the step instead of loading again.
#[derive(Clone, PartialEq)]
struct RowKey {
    input: usize,
    base: String,
    guards: Vec<String>,
    steps: i64,
    vector: i64,
}

/// A row's vectors of one input kept in a register array.
struct Kept {
    key: RowKey,
    /// The array (named at its first use).
    name: Option<String>,
    /// Whether a pass written so far loads it: the later ones read it.
    loaded: bool,
}

/// The loop counter's name in keys ([`RowKey`]), the same in every pass.
const STEP: &str = "ix_step";

/// The keys read by two passes or more, within the budget ([`MAX_KEPT_VECTORS`],
/// [`MAX_KEPT_TOTAL`], counting each of a thread's `rows_per_thread` rows), in the order of
/// their first pass.
fn kept_vectors(uses: &[RowKey], rows_per_thread: i64) -> Vec<Kept> {
    let mut kept: Vec<Kept> = Vec::new();
    let mut total = 0;
    for (k, key) in uses.iter().enumerate() {
        if uses[..k].contains(key) || !uses[k + 1..].contains(key) {
            continue;
        }
        // A lane keeps the vectors of each of its rows.
        let n = key.steps.saturating_mul(rows_per_thread.max(1));
        if n > MAX_KEPT_VECTORS || total + n > MAX_KEPT_TOTAL {
            continue;
        }
        total += n;
        kept.push(Kept {
            key: key.clone(),
            name: None,
            loaded: false,
        });
    }
    kept
}

/// `m` with its variable `from` named `to`.
fn renamed(m: &IndexingMap, from: &str, to: &str) -> IndexingMap {
    let mut m = m.clone();
    for v in m.dims.iter_mut().chain(m.ranges.iter_mut()) {
        if v.name == from {
            v.name = to.to_string();
        }
    }
    m
}

/// The guards [`guard_lines`] writes before the vector loads of a pass over `orig`
/// (simplified as `simp`), its loop counter `step` named [`STEP`]: part of [`RowKey`].
fn step_guards(
    orig: &IndexingMap,
    simp: &IndexingMap,
    step: &str,
    spec: &KernelSpec,
) -> Vec<String> {
    let mut pre = BodyWriter::new(spec, false, 0);
    let mut inner = BodyWriter::new(spec, false, 0);
    guard_lines(
        &renamed(orig, step, STEP),
        &renamed(simp, step, STEP),
        &mut pre,
        &mut inner,
    );
    pre.lines
}

/// The 16-byte loads of one loop over `unroll_id` (of a pass over the row, its counter
/// `step` running over `steps`, with the guards `guards` before its loads): each load's
/// input, offset at `unroll_id = 0`, register and key, and its kept array ([`Kept`]).
struct VecLoads {
    step: String,
    steps: i64,
    guards: Vec<String>,
    loads: Vec<VecLoad>,
}

struct VecLoad {
    input: usize,
    base: String,
    reg: String,
    /// `None` where the offset is not written alike with the counter renamed (never kept).
    key: Option<RowKey>,
    kept: Option<usize>,
}

impl<'a> Coop<'a> {
    fn fresh(&mut self, prefix: &str) -> String {
        self.count += 1;
        format!("{prefix}{}", self.count)
    }

    /// A load of `input` through `map` at `ctx`, inside a loop over `unroll_id` whose
    /// elements it reads 16 contiguous, aligned bytes at a time ([`super::cuda::vector_base`]):
    /// one vector load before the loop, this element taken from it. `None`: a plain load.
    fn vector_load(
        &mut self,
        input: usize,
        map: &IndexingMap,
        ctx: &IndexingMap,
    ) -> Result<Option<String>, MapError> {
        if self.vec.is_none() {
            return Ok(None);
        }
        let tensor = &self.spec.inputs[input];
        if tensor.elem.bytes() * self.vector != 16 {
            return Ok(None);
        }
        let Some(base) = super::cuda::vector_base(ctx, map, &tensor.strides()?, self.vector)?
        else {
            return Ok(None);
        };
        let Some(v) = self.vec.as_ref() else {
            return Ok(None);
        };
        let known = v
            .loads
            .iter()
            .find(|l| l.input == input && l.base == base)
            .map(|l| l.reg.clone());
        let reg = match known {
            Some(r) => r,
            None => {
                let step = v.step.clone();
                let key = super::cuda::vector_base(
                    &renamed(ctx, &step, STEP),
                    map,
                    &tensor.strides()?,
                    self.vector,
                )?
                .map(|b| RowKey {
                    input,
                    base: b,
                    guards: v.guards.clone(),
                    steps: v.steps,
                    vector: self.vector,
                });
                let kept = key
                    .as_ref()
                    .and_then(|key| self.kept.iter().position(|k| k.key == *key));
                let r = match kept {
                    Some(k) => {
                        let name = match self.kept[k].name.clone() {
                            Some(n) => n,
                            None => {
                                let n = self.fresh("x");
                                self.kept[k].name = Some(n.clone());
                                n
                            }
                        };
                        if self.rows_per_thread > 1 {
                            format!("{name}[i][{step}]")
                        } else {
                            format!("{name}[{step}]")
                        }
                    }
                    None => self.fresh("x"),
                };
                if let Some(v) = self.vec.as_mut() {
                    v.loads.push(VecLoad {
                        input,
                        base,
                        reg: r.clone(),
                        key,
                        kept,
                    });
                }
                r
            }
        };
        let elem = format!(
            "reinterpret_cast<const {} *>(&{reg})[unroll_id]",
            types::mem(tensor.elem, true)
        );
        Ok(Some(types::load(tensor.elem, &elem, true)))
    }

    /// The lines that read a pass's vectors `v`, before its loop over `unroll_id`: a load
    /// each, or none where an earlier pass over the row loaded it into registers kept for
    /// this one. Written at the pass's end, when the passes before it are written.
    fn load_lines(&mut self, v: &VecLoads) -> Vec<String> {
        let mut out = Vec::new();
        for l in &v.loads {
            let tensor = &self.spec.inputs[l.input];
            let vt = super::cuda::vector_type(tensor.elem);
            let what = format!(
                "// p{} ({}): {} elements of unroll_id",
                l.input, tensor.name, self.vector
            );
            let load = format!("*reinterpret_cast<const {vt} *>(p{} + {})", l.input, l.base);
            match l.kept {
                None => {
                    out.push(format!("{what} in one 128-bit load ({vt})"));
                    out.push(format!("const {vt} {} = {load};", l.reg));
                }
                Some(k) if !self.kept[k].loaded => {
                    self.kept[k].loaded = true;
                    out.push(format!(
                        "{what} in one 128-bit load ({vt}), kept in registers for the row's later passes"
                    ));
                    out.push(format!("{} = {load};", l.reg));
                }
                Some(_) => out.push(format!(
                    "{what} from the registers {}, loaded by an earlier pass over the row (the row is read once)",
                    l.reg
                )),
            }
            if let Some(key) = &l.key {
                self.uses.push(key.clone());
            }
        }
        out
    }

    fn writer(&self, indent: usize) -> BodyWriter<'a> {
        let mut w = BodyWriter::new(self.spec, self.naive, indent);
        w.index_ty = self.index_ty;
        w.cuda = true;
        w
    }

    /// A C expression for `b` at the index `ctx` gives (`ctx`'s variable 0 is the row `r`),
    /// of the register type of `b`'s element type (`want` for a bare constant); statements
    /// go to `w`, the row's reductions to [`Coop::hoisted`].
    fn expr_t(
        &mut self,
        w: &mut BodyWriter,
        b: &Body,
        ctx: &IndexingMap,
        want: ElemType,
    ) -> Result<String, MapError> {
        let t = self.spec.elem_opt(b).unwrap_or(want);
        if let Body::Load { input, map } = b {
            if let Some(x) = self.vector_load(*input, map, ctx)? {
                return Ok(x);
            }
        }
        Ok(match b {
            Body::Const(c) => types::constant(*c, t),
            Body::Load { .. }
            | Body::Index { .. }
            | Body::Guard { .. }
            | Body::DynCall { .. }
            | Body::Opaque { .. }
            | Body::Param(..)
            | Body::ReduceTuple { .. } => {
                let params = self.params.clone();
                w.body_t(b, ctx, &params, t)?
            }
            Body::Unary(..)
            | Body::Binary(..)
            | Body::Convert(..)
            | Body::Compare(..)
            | Body::Select(..) => elementwise(&mut AtRow { coop: self, w, ctx }, b, t)?,
            Body::Call { func, map } => {
                let inner = substitute(ctx, map)?;
                if self.share_calls {
                    if let Some(v) = w.reused_call(*func, &inner) {
                        return Ok(v);
                    }
                }
                let f = self
                    .spec
                    .functions
                    .get(*func)
                    .ok_or_else(|| MapError::Other(format!("no function {func}")))?;
                let from = w.line_count();
                w.line(format!("// {} at {}", f.name, simplified(&inner)));
                let ft = self.spec.function_elem(*func);
                let x = self.expr_t(w, &f.body, &inner, ft)?;
                if self.share_calls {
                    w.remember_call(*func, inner, x, from)
                } else {
                    x
                }
            }
            Body::Reduce {
                op,
                init,
                func,
                map,
            } => {
                let m = substitute(ctx, map)?;
                let canon = canonical(ctx, &m).ok_or_else(|| {
                    MapError::Other(format!(
                        "{}: a reduction read inside the body is not per row",
                        self.spec.name
                    ))
                })?;
                let shown = simplified(&canon);
                let key = format!("{func} {op:?} {init} {shown}");
                if let Some((_, acc)) = self.done.iter().find(|(k, _)| *k == key) {
                    return Ok(acc.clone());
                }
                let f = self
                    .spec
                    .functions
                    .get(*func)
                    .ok_or_else(|| MapError::Other(format!("no function {func}")))?;
                // Lane `lane` takes the reduction's elements lane, lane + row_threads, ..
                // (linear over its own variables, row-major), `vector` at a time.
                let rt = self.row_threads;
                let crate::gpu::rows::LaneSplit {
                    map: coop,
                    vector,
                    steps,
                } = crate::gpu::rows::lane_split(&canon, rt, self.vector)?;
                let outer_vec = self.vec.take();
                let saved_vector = std::mem::replace(&mut self.vector, vector);
                // The loop body first: the reductions it reads are written before this one.
                // Guards that do not move with `unroll_id` come before its loop (and its
                // vector loads), the others inside it.
                let mut body = self.writer(if vector > 1 { 3 } else { 2 });
                let mut pre = self.writer(2);
                if let Some(c) = &self.past_end {
                    pre.line(format!("if ({c}) continue;"));
                }
                let guard_map = if self.naive {
                    coop.clone()
                } else {
                    let s = simplified(&coop);
                    if s.status == crate::map::Status::Defined {
                        s
                    } else {
                        coop.clone()
                    }
                };
                guard_lines(&coop, &guard_map, &mut pre, &mut body);
                if vector > 1 {
                    // The lane's steps: `j`, the range variable before `unroll_id`.
                    let step = coop.ranges[0].name.clone();
                    self.vec = Some(VecLoads {
                        guards: step_guards(&coop, &guard_map, &step, self.spec),
                        step,
                        steps,
                        loads: vec![],
                    });
                }
                let x = self.expr_t(&mut body, &f.body, &coop, t)?;
                // The accumulator: a register, or with several rows a thread an array of
                // them, the thread's row `i`'s element read inside the loops over `i`.
                let name = self.fresh("row");
                let per = self.rows_per_thread;
                let acc = if per > 1 {
                    format!("{name}[i]")
                } else {
                    name.clone()
                };
                body.line(format!("{acc} = {};", types::binary(*op, t, &acc, &x)));
                if let Some(v) = self.vec.take() {
                    for l in self.load_lines(&v) {
                        pre.line(l);
                    }
                    pre.line("#pragma unroll");
                    pre.line(format!(
                        "for ({} unroll_id = 0; unroll_id <= {}; ++unroll_id) {{",
                        self.index_ty,
                        vector - 1
                    ));
                    pre.lines.append(&mut body.lines);
                    pre.line("}");
                } else {
                    pre.lines.append(&mut body.lines);
                }
                let body = pre;
                self.vec = outer_vec;
                self.vector = saved_vector;
                let ty = types::reg(t);
                let mut h = self.writer(1);
                let what = match op {
                    crate::gpu::spec::BinOp::Add => "sum".to_string(),
                    crate::gpu::spec::BinOp::Mul => "product".to_string(),
                    o => format!("{o:?}").to_lowercase(),
                };
                h.line(format!(
                    "// {name} = {what} of {} over the row, once: each lane folds its part{}: {shown}",
                    f.name,
                    if rt == 1 {
                        String::new()
                    } else {
                        format!(", then the row's {rt} lanes exchange theirs")
                    }
                ));
                if steps - 1 > I32_INDEX.hi {
                    super::index_width_needs_64();
                }
                // The fold over the lane's part of the row, then the exchange among the
                // row's lanes of one warp (every lane ends with the warp's value).
                let mut fold = Vec::new();
                if steps < 64 {
                    fold.push("  #pragma unroll".to_string());
                }
                fold.push(format!(
                    "  for ({} j = 0; j <= {}; ++j) {{",
                    self.index_ty,
                    steps - 1
                ));
                fold.extend(body.lines);
                fold.push("  }".into());
                if rt > 1 {
                    // Every lane ends with the row's value (xor offsets stay in the row),
                    // or with its warp's part of it when the row has several warps.
                    fold.push(format!(
                        "  for (int off = {}; off > 0; off /= 2) {{",
                        rt.min(WARP) / 2
                    ));
                    fold.push(format!(
                        "    const {ty} other = __shfl_xor_sync(0xffffffffu, {acc}, off);"
                    ));
                    fold.push(format!(
                        "    {acc} = {};",
                        types::binary(*op, t, &acc, "other")
                    ));
                    fold.push("  }".into());
                }
                let init = types::constant(*init, t);
                let mut lines = h.lines;
                if per > 1 {
                    // Each of the thread's rows in turn, its loads independent of the
                    // others' (NVRTC unrolls the loop and overlaps them).
                    lines.push(format!("  {ty} {name}[{per}];"));
                    let mut each = vec![self.row_decl.clone(), format!("{acc} = {init};")];
                    each.extend(
                        fold.into_iter()
                            .map(|l| l.strip_prefix("  ").map(str::to_string).unwrap_or(l)),
                    );
                    lines.extend(indented(over_rows(per, each)));
                } else {
                    lines.push(format!("  {ty} {acc} = {init};"));
                    lines.extend(fold);
                }
                if rt > WARP {
                    // Several warps a row: lane 0 of each warp leaves its warp's value in
                    // shared memory (an array per reduction, so no barrier is needed
                    // before the next one writes), and after the block's barrier every
                    // thread of the row folds its row's warps in warp order: the same
                    // value in every thread, the same on every run. Every thread reaches
                    // the barrier: the row reductions come before any thread returns
                    // (a row past the output's last only skips its loads). With several
                    // rows a thread, one barrier for all of them.
                    let per_row = rt / WARP;
                    let warps = self.block / WARP;
                    lines.push(format!(
                        "  // the row's {per_row} warps: lane 0 of each leaves its warp's value in shared memory, every thread of the row folds them in order"
                    ));
                    let folded = |slot: &str| -> Vec<String> {
                        vec![
                            format!("{acc} = {slot}[th_x / {rt} * {per_row}];"),
                            format!("for (int k = 1; k < {per_row}; ++k) {{"),
                            format!(
                                "  {acc} = {};",
                                types::binary(
                                    *op,
                                    t,
                                    &acc,
                                    &format!("{slot}[th_x / {rt} * {per_row} + k]")
                                )
                            ),
                            "}".into(),
                        ]
                    };
                    if per > 1 {
                        lines.push(format!("  __shared__ {ty} {name}_warp[{per}][{warps}];"));
                        lines.push(format!("  if (th_x % {WARP} == 0) {{"));
                        lines.push("    #pragma unroll".into());
                        lines.push(format!(
                            "    for (int i = 0; i <= {}; ++i) {name}_warp[i][th_x / {WARP}] = {acc};",
                            per - 1
                        ));
                        lines.push("  }".into());
                        lines.push("  __syncthreads();".into());
                        lines.extend(indented(over_rows(per, folded(&format!("{name}_warp[i]")))));
                    } else {
                        lines.push(format!("  __shared__ {ty} {name}_warp[{warps}];"));
                        lines.push(format!(
                            "  if (th_x % {WARP} == 0) {name}_warp[th_x / {WARP}] = {acc};"
                        ));
                        lines.push("  __syncthreads();".into());
                        for l in folded(&format!("{name}_warp")) {
                            lines.push(format!("  {l}"));
                        }
                    }
                }
                self.hoisted.extend(lines);
                self.done.push((key, acc.clone()));
                acc
            }
        })
    }
}

/// Writes the kernel body of `launch` (see [`plan`]) into `w` (at its indent 1).
///
/// Written twice: the first time finds which vectors of the row more than one pass reads
/// ([`kept_vectors`]), the second keeps those in registers. (A pass meets its loads while
/// its body is written, and the elements' pass meets them before the reductions it reads,
/// which are written above it: which passes share a vector is known only at the end.)
pub fn emit(
    spec: &KernelSpec,
    launch: &Launch,
    naive: bool,
    w: &mut BodyWriter,
    params: &str,
) -> Result<(), MapError> {
    let mut probe = BodyWriter::new(spec, naive, w.indent);
    probe.index_ty = w.index_ty;
    probe.cuda = w.cuda;
    let uses = emit_with(spec, launch, naive, &mut probe, params, vec![])?;
    let per_thread = if launch.strategy == Strategy::RowNormalization {
        launch.rows_per_thread.max(1)
    } else {
        1
    };
    emit_with(
        spec,
        launch,
        naive,
        w,
        params,
        kept_vectors(&uses, per_thread),
    )?;
    Ok(())
}

/// [`emit`] with the vectors `kept` in registers; the keys of every pass's vector loads.
fn emit_with(
    spec: &KernelSpec,
    launch: &Launch,
    naive: bool,
    w: &mut BodyWriter,
    params: &str,
    kept: Vec<Kept>,
) -> Result<Vec<RowKey>, MapError> {
    let rt = launch.row_threads.max(1);
    let root = launch.strategy == Strategy::RowReduction;
    // The block's row groups, each of `rt` lanes, and the rows each thread takes.
    let groups = launch.block[0] / rt;
    let per = if root {
        1
    } else {
        launch.rows_per_thread.max(1)
    };
    let rows_per_block = groups * per;
    let out = &spec.output;
    // The rows: the output's, or each element its own (`rows::rows_of`).
    let lm = if root {
        None
    } else {
        Some(
            crate::gpu::rows::rows_of(spec)?
                .ok_or_else(|| MapError::Other("a row normalization needs rows".into()))?,
        )
    };
    let rows = match &lm {
        None => out.num_elements()?,
        Some(lm) => lm.dims[0].bounds.hi + 1,
    };
    let launched = launch.grid[0]
        .checked_mul(rows_per_block)
        .ok_or_else(|| MapError::Overflow("the grid".into()))?;
    if launched - 1 > I32_INDEX.hi {
        super::index_width_needs_64();
    }
    let ity = w.index_ty;
    w.line(format!(
        "// the row's {rt} lane{}{} (row r: {rows_per_block} per block), lane l takes elements l, l + {rt}, ..",
        if rt == 1 { "" } else { "s" },
        if rt > WARP {
            format!(", {} warps", rt / WARP)
        } else {
            String::new()
        }
    ));
    let mut row = if rows_per_block == 1 {
        "bl_x".to_string()
    } else if rt == 1 {
        format!("bl_x * {rows_per_block} + th_x")
    } else if groups == 1 {
        format!("bl_x * {rows_per_block}")
    } else {
        format!("bl_x * {rows_per_block} + th_x / {rt}")
    };
    if per > 1 {
        // Triton's layout: the thread's rows `i` are the block's row groups apart.
        row += &if groups == 1 {
            " + i".to_string()
        } else {
            format!(" + i * {groups}")
        };
        w.line(format!(
            "// each thread takes {per} rows, i = 0 .. {}: row r = {row}",
            per - 1
        ));
    } else {
        w.line(format!("const {ity} r = {row};"));
    }
    let row_decl = format!("const {ity} r = {row};");
    if rt > 1 {
        w.line(format!("const {ity} lane = th_x % {rt};"));
    } else {
        w.line(format!("const {ity} lane = 0;"));
    }
    let past_end = (launched > rows).then(|| format!("r > {}", rows - 1));
    let mut coop = Coop {
        share_calls: spec.inline_nodes_exceed(crate::gpu::spec::INLINE_NODES),
        spec,
        naive,
        index_ty: ity,
        params: params.to_string(),
        row_threads: rt,
        block: launch.block[0],
        past_end: past_end.clone(),
        hoisted: vec![],
        done: vec![],
        count: 0,
        vector: launch.config.vector.max(1),
        vec: None,
        kept,
        uses: vec![],
        rows_per_thread: per,
        row_decl: row_decl.clone(),
    };
    let out_id = IndexingMap::identity(&out.dims);
    let strides = out.strides()?;
    if root {
        let scope = crate::gpu::rows::root_scope(spec, rt)?;
        let mut ew = coop.writer(1);
        let v = coop.expr_t(&mut ew, &spec.functions[0].body, &scope, out.elem)?;
        w.lines.append(&mut coop.hoisted);
        w.line("// lane 0 writes the row's value");
        match &past_end {
            Some(c) => w.line(format!("if (lane != 0 || {c}) return;")),
            None if rt > 1 => w.line("if (lane != 0) return;"),
            None => {}
        }
        w.lines.append(&mut ew.lines);
        let k = w.offset(&scope, &out_id, &strides, "out")?;
        w.line(format!("out[{k}] = {};", types::store(out.elem, &v, true)));
        return Ok(coop.uses);
    }
    // The row's elements: lane + col * rt along the minor dimension, or with `vector`
    // elements a lane, (lane + col * rt) * vector + unroll_id (the launch's own map).
    let lm = lm.ok_or_else(|| MapError::Other("a row normalization needs rows".into()))?;
    let cols = lm.dims[1].bounds.hi + 1;
    let vector = launch.config.vector.max(1);
    if cols % vector != 0 {
        return Err(MapError::Other(format!(
            "vector={vector} does not divide the row's {cols} elements"
        )));
    }
    let steps = (cols / vector + rt - 1) / rt;
    let scope = crate::gpu::rows::element_scope(&lm, rt, vector)?;
    let guard_map = if naive {
        scope.clone()
    } else {
        let s = simplified(&scope);
        if s.status == crate::map::Status::Defined {
            s
        } else {
            scope.clone()
        }
    };
    let mut pre = coop.writer(2);
    let mut ew = coop.writer(if vector > 1 { 3 } else { 2 });
    guard_lines(&scope, &guard_map, &mut pre, &mut ew);
    if vector > 1 {
        coop.vec = Some(VecLoads {
            step: "col".into(),
            steps,
            guards: step_guards(&scope, &guard_map, "col", spec),
            loads: vec![],
        });
    }
    let v = coop.expr_t(&mut ew, &spec.functions[0].body, &scope, out.elem)?;
    let stored = types::store(out.elem, &v, true);
    // The row's elements written 16 bytes at a time where the output's type and map allow.
    let out_base = if vector > 1 && out.elem.bytes() * vector == 16 {
        super::cuda::vector_base(&scope, &out_id, &strides, vector)?
    } else {
        None
    };
    let ovt = super::cuda::vector_type(out.elem);
    match &out_base {
        Some(_) => ew.line(format!(
            "reinterpret_cast<{} *>(&ov)[unroll_id] = {stored};",
            types::mem(out.elem, true)
        )),
        None => {
            let k = ew.offset(&scope, &out_id, &strides, "out")?;
            ew.line(format!("out[{k}] = {stored};"));
        }
    }
    if let Some(vl) = coop.vec.take() {
        for l in coop.load_lines(&vl) {
            pre.line(l);
        }
        if out_base.is_some() {
            pre.line(format!("{ovt} ov;"));
        }
        pre.line("#pragma unroll");
        pre.line(format!(
            "for ({ity} unroll_id = 0; unroll_id <= {}; ++unroll_id) {{",
            vector - 1
        ));
        pre.lines.append(&mut ew.lines);
        pre.line("}");
        if let Some(base) = &out_base {
            pre.line(format!(
                "// out: {vector} elements in one 128-bit store ({ovt})"
            ));
            pre.line(format!("*reinterpret_cast<{ovt} *>(out + {base}) = ov;"));
        }
    } else {
        pre.lines.append(&mut ew.lines);
    }
    // The arrays of the row's vectors kept in registers, before the passes that fill and
    // read them (every index a constant once the loops are unrolled, so NVRTC keeps them in
    // registers).
    for k in &coop.kept {
        if let Some(name) = &k.name {
            let tensor = &spec.inputs[k.key.input];
            let vt = super::cuda::vector_type(tensor.elem);
            w.line(format!(
                "// p{} ({}): the lane's {} vectors of the row, loaded once by the first pass over the row that reads them, kept in registers for the later ones",
                k.key.input, tensor.name, k.key.steps
            ));
            if per > 1 {
                w.line(format!("{vt} {name}[{per}][{}];", k.key.steps));
            } else {
                w.line(format!("{vt} {name}[{}];", k.key.steps));
            }
        }
    }
    w.lines.append(&mut coop.hoisted);
    w.line(if vector > 1 {
        format!("// then the row's elements, each lane its own {vector} at a time")
    } else {
        "// then the row's elements, each lane its own".to_string()
    });
    let mut pass = Vec::new();
    if steps < 64 {
        pass.push("#pragma unroll".to_string());
    }
    pass.push(format!(
        "for ({ity} col = 0; col <= {}; ++col) {{",
        steps - 1
    ));
    // (`pre`'s lines carry the indent of the loop's body)
    let base = "  ".repeat(w.indent);
    pass.extend(
        pre.lines
            .drain(..)
            .map(|l| l.strip_prefix(&base).map(str::to_string).unwrap_or(l)),
    );
    pass.push("}".into());
    if per > 1 {
        let mut each = vec![row_decl];
        if let Some(c) = &past_end {
            each.push(format!("if ({c}) continue;"));
        }
        each.extend(pass);
        for l in over_rows(per, each) {
            w.line(l);
        }
    } else {
        if let Some(c) = &past_end {
            w.line(format!("if ({c}) return;"));
        }
        for l in pass {
            w.line(l);
        }
    }
    Ok(coop.uses)
}

/// The conditions under which a thread is outside `simp` (the simplified form of `orig`)
/// by a bound `simp` narrows: simplification moves a constraint on one variable into that
/// variable's bounds (`lane in [0, 19]` from `lane + col * 32 in [0, 19]` with `col` in
/// [0, 0]), and the constraint is gone from `simp`'s list, but the thread's lane and the
/// loop counters still run over `orig`'s bounds. Without these guards, lanes 20 to 31 of a
/// 20-column row read and wrote the next row.
fn tightened_named(orig: &IndexingMap, simp: &IndexingMap) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for v in simp.dims.iter().chain(&simp.ranges) {
        let Some(o) = orig
            .dims
            .iter()
            .chain(&orig.ranges)
            .find(|o| o.name == v.name)
        else {
            continue;
        };
        let mut parts = Vec::new();
        if v.bounds.lo > o.bounds.lo {
            parts.push(format!("{} < {}", v.name, v.bounds.lo));
        }
        if v.bounds.hi < o.bounds.hi {
            parts.push(format!("{} > {}", v.name, v.bounds.hi));
        }
        if !parts.is_empty() {
            out.push((v.name.clone(), parts.join(" || ")));
        }
    }
    out
}

/// The guards of a lane's loop body over `orig` (simplified as `simp`): those free of
/// `unroll_id` into `pre` (before the loop over it and its vector loads), the others into
/// `inner`.
fn guard_lines<'w>(
    orig: &IndexingMap,
    simp: &IndexingMap,
    pre: &mut BodyWriter<'w>,
    inner: &mut BodyWriter<'w>,
) {
    for (name, cond) in tightened_named(orig, simp) {
        let w = if name == "unroll_id" {
            &mut *inner
        } else {
            &mut *pre
        };
        w.line(format!("if ({cond}) continue;"));
    }
    let u = simp
        .ranges
        .iter()
        .position(|v| v.name == "unroll_id")
        .map(|p| (simp.dims.len() + p) as u32);
    for &(e, iv) in &simp.constraints {
        if let Some(cond) = outside(e, iv, &simp.names(), &simp.bounds()) {
            let w = if u.is_some_and(|u| e.uses_var(u)) {
                &mut *inner
            } else {
                &mut *pre
            };
            w.line(format!("if ({cond}) continue;"));
        }
    }
}

/// [`Coop::expr_t`]'s operands, at one row.
struct AtRow<'r, 'a, 'w, 'c> {
    coop: &'r mut Coop<'a>,
    w: &'r mut BodyWriter<'w>,
    ctx: &'c IndexingMap,
}

impl ScalarWriter for AtRow<'_, '_, '_, '_> {
    fn spec(&self) -> &KernelSpec {
        self.coop.spec
    }
    fn operand(&mut self, b: &Body, want: ElemType) -> Result<String, MapError> {
        self.coop.expr_t(self.w, b, self.ctx, want)
    }
    fn register(&mut self) -> String {
        self.coop.fresh("v")
    }
    fn statement(&mut self, s: String) {
        self.w.line(s)
    }
}
