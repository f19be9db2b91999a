//! Dot fusions as GEMMs: a fused computation with one `dot` becomes a [`GemmSpec`] — the
//! dot's dimension numbers reduced to a batched `C[b, m, n] = Σ_k A[b, m, k] · B[b, k, n]`,
//! each operand's fused *prologue* (the elementwise, broadcast and convert ops feeding it)
//! as a [`KernelSpec`] whose output is the operand, and the *epilogue* (the ops consuming
//! the dot's result) as a [`KernelSpec`] that reads the dot's value as one more input.
//!
//! ```text
//! p0 = f32[2048,1024] parameter(0)            lhs: KernelSpec, output f32[2048,1024]:
//! p1 = f32[1024] parameter(1)                   multiply(load p0 (d0, d1), load p1 (d1))
//! m  = multiply(p0, broadcast(p1))            rhs: KernelSpec, output p3 itself
//! p3 = f32[1024,4096] parameter(3)            epilogue: tanh(load acc (d0, d1))
//! d  = dot(m, p3), lhs_contracting_dims={1}   B = 1, M = 2048, N = 4096, K = 1024
//! ROOT t = tanh(d)
//! ```
//!
//! The three specs share the fusion's parameters as inputs (in order), so the kernels pass
//! the same pointers `p0, p1, ..` to every part. Several operand dimensions of one role
//! (two contracting dimensions, two free ones) are linearized in the dot's order: `m`
//! runs over the lhs free dimensions row-major, `k` over the contracting ones, and the maps
//! from `(b, m, k)` to an operand's index delinearize them ([`operand_map`]).
//!
//! The reference ([`expected`]) evaluates each prologue with the interpreter of
//! [`reference`](super::reference), contracts in `f64`, and bounds the error of an `f32`
//! accumulation of `K` products by `γ_K · Σ|a·b|` (`γ_K = K·u / (1 − K·u)`, `u = 2^-24`,
//! the classical bound for recursive summation, which also covers FMA and any order of the
//! partial tile sums), then carries that interval through the epilogue.

use super::from_hlo;
use super::reference::{read_value, round_float, Reference};
use super::spec::{is_identity, Body, ElemType, KernelSpec, Tensor};
use crate::expr::Expr;
use crate::hlo::workspace::{Target, Workspace};
use crate::hlo::{Computation, Instr, InstrId, Module};
use crate::map::{IndexingMap, Variable};
use crate::MapError;

/// The block tiling of a GEMM kernel: an output tile of `bm × bn` per block, K steps of
/// `bk`, `warps × 32` threads, and `stages` shared-memory buffers (loads of step `t + stages
/// − 1` overlap the products of step `t`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Tiling {
    pub bm: i64,
    pub bn: i64,
    pub bk: i64,
    pub warps: i64,
    pub stages: i64,
}

impl Default for Tiling {
    fn default() -> Self {
        Tiling {
            bm: 64,
            bn: 64,
            bk: 16,
            warps: 4,
            stages: 2,
        }
    }
}

/// The most shared memory a block may declare statically (48 KiB).
pub const SHARED_LIMIT: i64 = 48 * 1024;

/// How a block's threads cover its output tile: `tx × ty` threads, each with a `tm × tn`
/// micro-tile (rows `ty + i·ty_count`, columns `tx + j·tx_count`, so a warp's neighbouring
/// threads read neighbouring columns of the B tile and write neighbouring output columns;
/// or, where [`Split::vector_shared_loads`], in fours: rows `4·ty + i mod 4 + 4·ty_count·⌊i/4⌋`,
/// each four read from shared memory as one 128-bit load).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Split {
    pub threads: i64,
    pub tx: i64,
    pub ty: i64,
    pub tm: i64,
    pub tn: i64,
}

impl Split {
    /// Whether the micro-tile's rows and columns come in fours, read as `float4`s: a warp
    /// then reads its A and B values for one K step in `(tm + tn) / 4` shared loads instead
    /// of `tm + tn`, which for 8 × 8 lifts the bound shared memory's 128 bytes a cycle put on
    /// the FMAs from a quarter of their peak to about two thirds.
    pub fn vector_shared_loads(&self) -> bool {
        self.tm % 4 == 0 && self.tn % 4 == 0
    }
}

impl Tiling {
    /// The tilings [`GemmSpec::simt_tiling`] chooses from, largest first: (bm, bn, warps)
    /// of 128×128 (8), 128×64, 64×128, 64×64, 32×64, 64×32, 32×32 (4) and 16×16 (2), each
    /// with K steps of 8 and 2 stages.
    pub fn simt_candidates() -> Vec<Tiling> {
        [
            (128, 128, 8),
            (128, 64, 4),
            (64, 128, 4),
            (64, 64, 4),
            (32, 64, 4),
            (64, 32, 4),
            (32, 32, 4),
            (16, 16, 2),
        ]
        .into_iter()
        .map(|(bm, bn, warps)| Tiling {
            bm,
            bn,
            bk: 8,
            warps,
            stages: 2,
        })
        .collect()
    }

    pub fn threads(&self) -> i64 {
        self.warps * 32
    }

    /// `64x64x16, 4 warps, 2 stages`.
    pub fn describe(&self) -> String {
        format!(
            "tile {}x{}x{}, {} warp{}, {} stage{}",
            self.bm,
            self.bn,
            self.bk,
            self.warps,
            if self.warps == 1 { "" } else { "s" },
            self.stages,
            if self.stages == 1 { "" } else { "s" }
        )
    }

    /// Checks the tiling and splits the output tile over the threads: the split with the
    /// squarest micro-tile (then the widest row of threads) among those where `tx` divides
    /// `bn` and `ty` divides `bm`.
    pub fn split(&self) -> Result<Split, String> {
        for (name, v, hi) in [
            ("the block tile's M", self.bm, 1024),
            ("the block tile's N", self.bn, 1024),
            ("the block tile's K", self.bk, 1024),
            ("warps", self.warps, 32),
            ("stages", self.stages, 8),
        ] {
            if !(1..=hi).contains(&v) {
                return Err(format!("{name} must be in [1, {hi}], not {v}"));
            }
        }
        let threads = self.threads();
        let shared = self.shared_bytes();
        if shared > SHARED_LIMIT {
            return Err(format!(
                "{} needs {shared} bytes of shared memory ({} x {} x ({} + {}) floats, padded); a block may declare {SHARED_LIMIT}",
                self.describe(),
                self.stages,
                self.bk,
                self.bm,
                self.bn
            ));
        }
        let mut best: Option<Split> = None;
        for tx in 1..=threads {
            if threads % tx != 0 || self.bn % tx != 0 {
                continue;
            }
            let ty = threads / tx;
            if self.bm % ty != 0 {
                continue;
            }
            let s = Split {
                threads,
                tx,
                ty,
                tm: self.bm / ty,
                tn: self.bn / tx,
            };
            let better = match best {
                None => true,
                Some(b) => {
                    let d = |s: &Split| (s.tm - s.tn).abs();
                    d(&s) < d(&b) || (d(&s) == d(&b) && s.tx > b.tx)
                }
            };
            if better {
                best = Some(s);
            }
        }
        let s = best.ok_or_else(|| {
            format!(
                "the {}x{} output tile cannot be split evenly over {threads} threads ({} warps): the threads must form a grid tx x ty with tx dividing {} and ty dividing {}",
                self.bm, self.bn, self.warps, self.bn, self.bm
            )
        })?;
        if s.tm * s.tn > 256 {
            return Err(format!(
                "{} gives each thread {} accumulators ({}x{}); at most 256 fit in registers",
                self.describe(),
                s.tm * s.tn,
                s.tm,
                s.tn
            ));
        }
        Ok(s)
    }

    /// Padding of a shared tile's rows: an odd row length, so threads storing down a column
    /// hit distinct banks; or, for 128-bit loads (`vec`), 4 floats, which keeps rows 16-byte
    /// aligned and puts K-step `kk`'s row 4·kk banks on, so the 8 × 4 elements a warp stores
    /// of a K-fastest tile of K step 8 fall in 32 distinct banks.
    pub fn pad(n: i64, vec: bool) -> i64 {
        if vec {
            4
        } else if n % 2 == 0 {
            1
        } else {
            0
        }
    }

    /// Bytes of the shared tiles: `stages` buffers of a `bk × bm` and a `bk × bn` float
    /// tile, rows padded (the larger padding, of 128-bit loads).
    pub fn shared_bytes(&self) -> i64 {
        let row = (self.bm + Self::pad(self.bm, true)) + (self.bn + Self::pad(self.bn, true));
        self.stages
            .saturating_mul(self.bk)
            .saturating_mul(row)
            .saturating_mul(4)
    }
}

/// One operand of the dot: its prologue and the role of each of its dimensions.
#[derive(Clone, Debug)]
pub struct Operand {
    /// The fused ops computing the operand: output = the dot's operand, inputs = the
    /// fusion's parameters.
    pub spec: KernelSpec,
    /// The operand's batch dimensions, in the dot's batch order.
    pub batch: Vec<usize>,
    /// Its free (non-contracting, non-batch) dimensions, in order.
    pub free: Vec<usize>,
    /// Its contracting dimensions, in the dot's contracting order.
    pub contracting: Vec<usize>,
    /// Whether a contracting dimension is minor-most in the operand's layout: a tile is
    /// then loaded K-fastest (coalesced along K), else along its free dimension.
    pub k_minor: bool,
}

/// A dot fusion as a batched GEMM with a prologue per operand and an epilogue.
#[derive(Clone, Debug)]
pub struct GemmSpec {
    pub name: String,
    pub inputs: Vec<Tensor>,
    /// The fusion's output (the epilogue's root, or the dot itself).
    pub output: Tensor,
    /// The dot's result (its element type is what the `f32` accumulator is rounded to).
    pub dot: Tensor,
    pub lhs: Operand,
    pub rhs: Operand,
    /// The ops after the dot: inputs = the fusion's parameters, then the dot's value
    /// (input `inputs.len()`, read only at the output's own index).
    pub epilogue: Option<KernelSpec>,
    /// Extents of the batch, lhs free, rhs free and contracting dimensions.
    pub batch_dims: Vec<i64>,
    pub m_dims: Vec<i64>,
    pub n_dims: Vec<i64>,
    pub k_dims: Vec<i64>,
    pub b: i64,
    pub m: i64,
    pub n: i64,
    pub k: i64,
    /// The tiling XLA chose, from the fusion's `backend_config` (output tile, num_warps,
    /// num_stages) and the dot's (`sizes`: the K step), when printed.
    pub xla: Option<Tiling>,
}

/// `a / b` rounded up, for `a >= 0` (no overflow near `i64::MAX`); `b` below 1 counts as 1.
pub fn ceil_div(a: i64, b: i64) -> i64 {
    let b = b.max(1);
    a / b + i64::from(a % b != 0)
}

fn product(dims: &[i64], what: &str) -> Result<i64, String> {
    dims.iter()
        .try_fold(1i64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| format!("the {what} extent overflows"))
}

/// Whether `name` names a fusion (or a computation, or a lone instruction) with a `dot`:
/// its GEMM spec, or why it cannot be made; `None` when it has no dot (or names nothing).
pub fn for_name(ws: &Workspace, name: &str) -> Option<Result<GemmSpec, String>> {
    let module = &ws.module;
    let (comp, caller): (std::borrow::Cow<Computation>, Option<&Instr>) = match ws.resolve(name)? {
        Target::Computation(c) => {
            // The fusion instruction that calls it, for XLA's tiling.
            let caller = module.computations.iter().find_map(|o| {
                o.instrs
                    .iter()
                    .find(|i| i.opcode == "fusion" && i.attrs.calls.as_deref() == Some(&c.name))
            });
            (std::borrow::Cow::Borrowed(c), caller)
        }
        Target::Instr(c, id) => {
            let ins = &c.instrs[id];
            if ins.opcode == "fusion" {
                let f = module.computation(ins.attrs.calls.as_deref()?)?;
                (std::borrow::Cow::Borrowed(f), Some(ins))
            } else if ins.opcode == "dot" {
                (std::borrow::Cow::Owned(lone_dot(c, id)), None)
            } else {
                return None;
            }
        }
    };
    let dots: Vec<InstrId> = (0..comp.instrs.len())
        .filter(|&i| comp.instrs[i].opcode == "dot")
        .collect();
    match dots.as_slice() {
        [] => None,
        [d] => Some(from_computation(module, &comp, *d, caller)),
        _ => Some(Err(format!(
            "`{}` has {} dots; a GEMM kernel computes one",
            comp.name,
            dots.len()
        ))),
    }
}

/// The GEMM spec of a fused computation standing alone (a scaled-down copy of a fusion's:
/// no caller, so no XLA tiling); `None` when it has no dot.
pub fn for_computation(module: &Module, comp: &Computation) -> Option<Result<GemmSpec, String>> {
    let dots: Vec<InstrId> = (0..comp.instrs.len())
        .filter(|&i| comp.instrs[i].opcode == "dot")
        .collect();
    match dots.as_slice() {
        [] => None,
        [d] => Some(from_computation(module, comp, *d, None)),
        _ => Some(Err(format!(
            "`{}` has {} dots; a GEMM kernel computes one",
            comp.name,
            dots.len()
        ))),
    }
}

/// A lone `dot` instruction as a computation: its operands become parameters.
fn lone_dot(c: &Computation, id: InstrId) -> Computation {
    let ins = &c.instrs[id];
    let mut instrs = Vec::new();
    let mut ops = Vec::new();
    let mut seen: Vec<(InstrId, InstrId)> = Vec::new();
    for &o in &ins.operands {
        if let Some(&(_, k)) = seen.iter().find(|(x, _)| *x == o) {
            ops.push(k);
            continue;
        }
        let k = instrs.len();
        let mut p = c.instrs[o].clone();
        p.opcode = "parameter".into();
        p.operands.clear();
        p.attrs = Default::default();
        p.attrs.parameter_number = Some(k as i64);
        instrs.push(p);
        seen.push((o, k));
        ops.push(k);
    }
    let mut d = ins.clone();
    d.operands = ops;
    instrs.push(d);
    Computation {
        name: ins.name.clone(),
        root: instrs.len() - 1,
        instrs,
        is_entry: false,
        span: c.span,
    }
}

/// The cone of `root` in `comp`: the instructions it reads (every parameter kept, so the
/// inputs keep their numbers), with `as_param` (the dot, in the epilogue) turned into
/// parameter `number`.
fn cone(comp: &Computation, root: InstrId, as_param: Option<(InstrId, i64)>) -> Computation {
    let n = comp.instrs.len();
    let mut keep = vec![false; n];
    let mut stack = vec![root];
    while let Some(i) = stack.pop() {
        if i >= n || keep[i] {
            continue;
        }
        keep[i] = true;
        if as_param.is_some_and(|(d, _)| d == i) {
            continue;
        }
        stack.extend(comp.instrs[i].operands.iter().copied());
    }
    for (i, ins) in comp.instrs.iter().enumerate() {
        if ins.opcode == "parameter" {
            keep[i] = true;
        }
    }
    let mut new_id = vec![usize::MAX; n];
    let mut instrs = Vec::new();
    for i in 0..n {
        if keep[i] {
            new_id[i] = instrs.len();
            let mut ins = comp.instrs[i].clone();
            if let Some((d, number)) = as_param.filter(|(d, _)| *d == i) {
                let _ = d;
                ins.opcode = "parameter".into();
                ins.operands.clear();
                ins.attrs = Default::default();
                ins.attrs.parameter_number = Some(number);
            }
            instrs.push(ins);
        }
    }
    for ins in &mut instrs {
        for o in &mut ins.operands {
            *o = new_id[*o];
        }
    }
    Computation {
        name: comp.name.clone(),
        root: new_id[root],
        instrs,
        is_entry: false,
        span: comp.span,
    }
}

fn float_type(t: ElemType, what: &str) -> Result<(), String> {
    match t {
        ElemType::F32 | ElemType::BF16 | ElemType::F16 => Ok(()),
        _ => Err(format!(
            "{what} is {}; GEMM kernels take f32, bf16 and f16 (accumulating in f32)",
            t.hlo_name()
        )),
    }
}

fn dims_of(v: &[i64], rank: usize, what: &str) -> Result<Vec<usize>, String> {
    v.iter()
        .map(|&d| {
            usize::try_from(d)
                .ok()
                .filter(|&d| d < rank)
                .ok_or_else(|| format!("{what} {d} is not a dimension of a rank-{rank} operand"))
        })
        .collect()
}

fn from_computation(
    module: &Module,
    comp: &Computation,
    dot_id: InstrId,
    caller: Option<&Instr>,
) -> Result<GemmSpec, String> {
    let dot = &comp.instrs[dot_id];
    let dd = dot
        .attrs
        .dot
        .clone()
        .ok_or_else(|| format!("`{}` has no dimension numbers", dot.name))?;
    if dot.operands.len() != 2 {
        return Err(format!(
            "`{}` has {} operands, not 2",
            dot.name,
            dot.operands.len()
        ));
    }
    // Each operand's prologue: the cone of the operand, parameters as inputs.
    let mut operands = Vec::new();
    for (side, (batch, contracting)) in [
        ("lhs", (&dd.lhs_batch, &dd.lhs_contracting)),
        ("rhs", (&dd.rhs_batch, &dd.rhs_contracting)),
    ] {
        let root = dot.operands[if side == "lhs" { 0 } else { 1 }];
        let c = cone(comp, root, None);
        if c.instrs.iter().any(|i| i.opcode == "dot") {
            return Err(format!(
                "the {side} of `{}` is computed by another dot",
                dot.name
            ));
        }
        let spec = from_hlo::from_computation(module, &c)
            .map_err(|e| format!("the {side} prologue of `{}`: {e}", dot.name))?;
        float_type(spec.output.elem, &format!("the {side} of `{}`", dot.name))?;
        let rank = spec.output.rank();
        let batch = dims_of(batch, rank, &format!("{side} batch dimension"))?;
        let contracting = dims_of(contracting, rank, &format!("{side} contracting dimension"))?;
        let free: Vec<usize> = (0..rank)
            .filter(|d| !batch.contains(d) && !contracting.contains(d))
            .collect();
        if batch.len() + contracting.len() + free.len() != rank {
            return Err(format!(
                "the {side} dimension numbers of `{}` repeat a dimension",
                dot.name
            ));
        }
        let k_minor = spec
            .output
            .minor_dim()
            .is_some_and(|d| contracting.contains(&d));
        operands.push(Operand {
            spec,
            batch,
            free,
            contracting,
            k_minor,
        });
    }
    let rhs = operands.pop().ok_or("no rhs")?;
    let lhs = operands.pop().ok_or("no lhs")?;
    let ld = &lhs.spec.output.dims;
    let rd = &rhs.spec.output.dims;
    if lhs.batch.len() != rhs.batch.len() || lhs.contracting.len() != rhs.contracting.len() {
        return Err(format!(
            "`{}`: the operands have different numbers of batch or contracting dimensions",
            dot.name
        ));
    }
    let batch_dims: Vec<i64> = lhs.batch.iter().map(|&d| ld[d]).collect();
    let k_dims: Vec<i64> = lhs.contracting.iter().map(|&d| ld[d]).collect();
    if rhs
        .batch
        .iter()
        .map(|&d| rd[d])
        .ne(batch_dims.iter().copied())
        || rhs
            .contracting
            .iter()
            .map(|&d| rd[d])
            .ne(k_dims.iter().copied())
    {
        return Err(format!(
            "`{}`: the operands' batch or contracting extents differ",
            dot.name
        ));
    }
    let m_dims: Vec<i64> = lhs.free.iter().map(|&d| ld[d]).collect();
    let n_dims: Vec<i64> = rhs.free.iter().map(|&d| rd[d]).collect();
    let out_dims: Vec<i64> = batch_dims
        .iter()
        .chain(&m_dims)
        .chain(&n_dims)
        .copied()
        .collect();
    if out_dims != dot.dims() {
        return Err(format!(
            "`{}`: its shape {:?} is not batch, lhs free, rhs free dimensions {:?}",
            dot.name,
            dot.dims(),
            out_dims
        ));
    }
    let dot_t = Tensor {
        name: dot.name.clone(),
        elem: ElemType::from_hlo(dot.shape.elem())
            .ok_or_else(|| format!("`{}` has element type {}", dot.name, dot.shape.elem()))?,
        dims: dot.dims().to_vec(),
        minor_to_major: dot.shape.minor_to_major(),
    };
    float_type(dot_t.elem, &format!("`{}`", dot.name))?;
    let (b, m, n, k) = (
        product(&batch_dims, "batch")?,
        product(&m_dims, "M")?,
        product(&n_dims, "N")?,
        product(&k_dims, "K")?,
    );
    let n_params = comp.parameters().len();
    let (epilogue, output) = if comp.root == dot_id {
        (None, dot_t.clone())
    } else {
        let c = cone(comp, comp.root, Some((dot_id, n_params as i64)));
        let mut e = from_hlo::from_computation(module, &c)
            .map_err(|e| format!("the epilogue of `{}`: {e}", dot.name))?;
        inline_partitions(&mut e);
        check_epilogue(&e, n_params, &dot_t)?;
        let out = e.output.clone();
        (Some(e), out)
    };
    let inputs = lhs.spec.inputs.clone();
    let xla = caller.and_then(|f| xla_tiling(f, dot, &lhs, &rhs));
    Ok(GemmSpec {
        name: comp.name.clone(),
        inputs,
        output,
        dot: dot_t,
        lhs,
        rhs,
        epilogue,
        batch_dims,
        m_dims,
        n_dims,
        k_dims,
        b,
        m,
        n,
        k,
        xla,
    })
}

/// An elementwise epilogue that uses a value twice (`d * sigmoid(d)`, `x - mean` read by
/// two consumers) is a DAG: the builder gives the shared value a function of its own
/// (a partition). Each call of a partition at the caller's own index is replaced by the
/// partition's body — the same value, recomputed per use (the ops are pure) — so the
/// epilogue becomes the one function the GEMM kernel applies per accumulator. Left as it
/// is when any call is not at the caller's own index, a partition reduces or reads at run
/// time, or the inlined tree would grow past a bound.
fn inline_partitions(e: &mut KernelSpec) {
    if e.functions.len() < 2
        || e.root != super::spec::Root::Elementwise
        || !e.more_outputs.is_empty()
    {
        return;
    }
    fn size(b: &Body) -> usize {
        let mut n = 0;
        b.visit(&mut |_| n += 1);
        n
    }
    fn inline(b: &mut Body, funcs: &[super::spec::Function], budget: &mut usize) -> bool {
        match b {
            Body::Call { func, map } => {
                let Some(f) = funcs.get(*func) else {
                    return false;
                };
                if *func == 0 || !is_identity(map, &f.dims) {
                    return false;
                }
                let n = size(&f.body);
                if n > *budget {
                    return false;
                }
                *budget -= n;
                let mut nb = f.body.clone();
                if !inline(&mut nb, funcs, budget) {
                    return false;
                }
                *b = nb;
                true
            }
            Body::Unary(_, a) | Body::Convert(_, a) => inline(a, funcs, budget),
            Body::Binary(_, a, c) | Body::Compare(_, a, c) => {
                inline(a, funcs, budget) && inline(c, funcs, budget)
            }
            Body::Select(c, a, x) => {
                inline(c, funcs, budget) && inline(a, funcs, budget) && inline(x, funcs, budget)
            }
            Body::Guard {
                then, otherwise, ..
            } => inline(then, funcs, budget) && inline(otherwise, funcs, budget),
            Body::Const(_) | Body::Load { .. } | Body::Index { .. } | Body::Param(..) => true,
            Body::Reduce { .. }
            | Body::DynCall { .. }
            | Body::ReduceTuple { .. }
            | Body::Opaque { .. } => false,
        }
    }
    let mut body = e.functions[0].body.clone();
    let mut budget = 4096usize;
    if inline(&mut body, &e.functions, &mut budget) {
        e.functions[0].body = body;
        e.functions.truncate(1);
    }
}

/// The epilogue must be elementwise in the dot's value: one function over the dot's shape
/// that reads the dot only at its own index (the kernel holds one accumulator per output
/// element, and nothing else).
fn check_epilogue(e: &KernelSpec, acc: usize, dot: &Tensor) -> Result<(), String> {
    if e.output.dims != dot.dims
        || e.root != super::spec::Root::Elementwise
        || !e.more_outputs.is_empty()
    {
        return Err(format!(
            "the ops after `{}` give {}, not one array of its shape {:?}: only elementwise epilogues are fused into the GEMM",
            dot.name,
            e.output.shape_text(),
            dot.dims
        ));
    }
    if e.functions.len() != 1 {
        return Err(format!(
            "the ops after `{}` use a value twice ({} partitions): only single-partition epilogues are fused into the GEMM",
            dot.name,
            e.functions.len()
        ));
    }
    let mut bad = None;
    for (fi, f) in e.functions.iter().enumerate() {
        f.body.visit(&mut |b| {
            if let Body::Load { input, map } = b {
                if *input == acc && (fi != 0 || !is_identity(map, &dot.dims)) {
                    bad = Some(map.to_string());
                }
            }
        });
    }
    if let Some(m) = bad {
        return Err(format!(
            "the ops after `{}` read it through {m}, not at each output element's own index: only elementwise epilogues are fused into the GEMM",
            dot.name
        ));
    }
    Ok(())
}

impl GemmSpec {
    /// The maps through which the epilogue reads the dot's value (each the identity).
    pub fn acc_loads(&self) -> Vec<IndexingMap> {
        let mut out = Vec::new();
        if let Some(e) = &self.epilogue {
            for f in &e.functions {
                f.body.visit(&mut |b| {
                    if let Body::Load { input, map } = b {
                        if *input == self.inputs.len() && !out.contains(map) {
                            out.push(map.clone());
                        }
                    }
                });
            }
        }
        out
    }
}

/// XLA's tiling from the fusion's `backend_config`
/// (`block_level_fusion_config: {num_warps, num_stages, output_tiles: [{sizes}]}`) and the
/// dot's (`sizes`: the K step), when both are printed and the output tile's batch sizes
/// are 1.
fn xla_tiling(fusion: &Instr, dot: &Instr, lhs: &Operand, rhs: &Operand) -> Option<Tiling> {
    let tile = crate::gpu::spec::XlaTile::of(fusion)?;
    let sizes = &tile.sizes;
    let nb = lhs.batch.len();
    let (nm, nn) = (lhs.free.len(), rhs.free.len());
    if sizes.len() != nb + nm + nn || sizes[..nb].iter().any(|&s| s != 1) {
        return None;
    }
    let bm = sizes[nb..nb + nm].iter().product::<i64>();
    let bn = sizes[nb + nm..].iter().product::<i64>();
    let bk = crate::hlo::json_int(dot.backend_config()?.get("sizes")?.get(0)?)?;
    Some(Tiling {
        bm,
        bn,
        bk,
        warps: tile.num_warps,
        stages: tile.num_stages,
    })
}

impl GemmSpec {
    /// The tiling to use: the one given, else [`GemmSpec::simt_tiling`]'s.
    ///
    /// XLA's tiling (`self.xla`, from the fusion's `backend_config`) is shown beside it but
    /// not used by default: it is sized for Triton's tensor-core dot (a 16 × 8 output tile
    /// is one `mma.m16n8k8` TF32 fragment), while ixmap's kernel multiplies in `f32` on the
    /// CUDA cores, where a tile that small re-reads each loaded element only `bm·bn/(bm+bn)`
    /// = 5.3 times: on an H100 it ran 1.2–2.3× XLA's time on every GEMM of the shared dumps
    /// (2026-11-27, `benches/results/h100-2026-11-27-evening.md`). `tile=`, `warps=` and
    /// `stages=` still take XLA's when asked.
    pub fn tiling(&self, given: Option<Tiling>) -> Result<(Tiling, Split, &'static str), String> {
        if let Some(t) = given {
            let s = t.split()?;
            return Ok((t, s, "given"));
        }
        let t = self.simt_tiling(crate::gpu::launch::DeviceLimits::H100.sms);
        Ok((t, t.split()?, "ixmap's for f32 on CUDA cores"))
    }

    /// ixmap's block tiling for its `f32` kernel on `sms` multiprocessors: the largest of
    /// [`Tiling::simt_candidates`] that
    /// - does not overhang the output by more than rounding up to a power of two
    ///   (`bm ≤ 2^⌈log2 M⌉`, `bn ≤ 2^⌈log2 N⌉`: no block computes mostly padding), and
    /// - gives every multiprocessor a block (`B · ⌈M/bm⌉ · ⌈N/bn⌉ ≥ sms`);
    ///
    /// else, when no tile gives that many blocks, the smallest that fits.
    ///
    /// Why these: a thread's `tm × tn` accumulators re-use each value it reads from shared
    /// memory `tm·tn/(tm+tn)` times (4 for 8 × 8) and a block re-uses each element it loads
    /// from global memory `bm·bn/(bm+bn)` times (64 for 128 × 128), the register blocking
    /// of the classic SGEMM kernels (Volkov & Demmel 2008; NVIDIA's CUTLASS SIMT tiles are
    /// 128 × 128 × 8 with 8 × 8 per thread). With K steps of 8, 8 warps of 8 × 8
    /// accumulators take 125 registers a thread (ptxas, sm_90): two blocks per H100
    /// multiprocessor; K steps of 16 took 180, one block.
    pub fn simt_tiling(&self, sms: i64) -> Tiling {
        let pow2 = |x: i64| {
            let x = x.max(1) as u64;
            x.checked_next_power_of_two().unwrap_or(1 << 62) as i64
        };
        // Both caps are at least 16, so the last candidate, 16×16, always fits.
        let (cap_m, cap_n) = (pow2(self.m).max(16), pow2(self.n).max(16));
        let fitting = Tiling::simt_candidates()
            .into_iter()
            .filter(|t| t.bm <= cap_m && t.bn <= cap_n);
        let mut smallest = Tiling::default();
        for t in fitting {
            let (tm, tn) = self.tiles(&t);
            if self.b.saturating_mul(tm).saturating_mul(tn) >= sms {
                return t;
            }
            smallest = t;
        }
        smallest
    }

    /// Output tiles per batch element along M and N.
    pub fn tiles(&self, t: &Tiling) -> (i64, i64) {
        (ceil_div(self.m, t.bm), ceil_div(self.n, t.bn))
    }

    /// Refuses shapes the kernels cannot index: an empty output, or a grid past CUDA's
    /// limits. An empty contraction (K = 0) is emitted: no step of the K loop runs, and the
    /// output is the epilogue of zeros (the empty sum), as the reference says.
    pub fn check_sizes(&self, t: &Tiling) -> Result<(), MapError> {
        if self.b == 0 || self.m == 0 || self.n == 0 {
            return Err(MapError::Other(format!(
                "`{}` has no output elements: there is nothing to emit",
                self.name
            )));
        }
        let (tm, tn) = self.tiles(t);
        let grid = tm
            .checked_mul(tn)
            .ok_or_else(|| MapError::Overflow("the grid size".into()))?;
        if grid > i32::MAX as i64 || self.b > 65_535 {
            return Err(MapError::Other(format!(
                "`{}`: {grid} tiles x {} batch elements exceeds CUDA's grid (2^31 - 1 x 65535)",
                self.name, self.b
            )));
        }
        for t in self.inputs.iter().chain([&self.output, &self.dot]) {
            t.num_bytes()?;
        }
        Ok(())
    }

    /// Multiply-adds of the contraction.
    pub fn flops(&self) -> f64 {
        2.0 * self.b as f64 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Bytes read (each input once) plus the output written.
    pub fn bytes_moved(&self) -> Result<i64, MapError> {
        let mut total = self.output.num_bytes()?;
        for t in &self.inputs {
            total = total
                .checked_add(t.num_bytes()?)
                .ok_or_else(|| MapError::Overflow("the byte count".into()))?;
        }
        Ok(total)
    }

    /// `B = 32, M = 512, N = 512, K = 64`.
    pub fn shape_text(&self) -> String {
        format!(
            "B = {}, M = {}, N = {}, K = {}",
            self.b, self.m, self.n, self.k
        )
    }
}

/// Delinearizes `v` (row-major over `extents`) into one expression per extent.
fn delinearize(v: Expr, extents: &[i64]) -> Vec<Expr> {
    let mut out = vec![Expr::constant(0); extents.len()];
    let mut stride = 1i64;
    for (i, &e) in extents.iter().enumerate().rev() {
        let q = if stride == 1 {
            v
        } else {
            v.floordiv(Expr::constant(stride))
        };
        out[i] = if i == 0 {
            q
        } else {
            q.modulo(Expr::constant(e.max(1)))
        };
        stride = stride.saturating_mul(e.max(1));
    }
    out
}

/// The map from the kernel's scope `(b, x, y)` — batch, then the linear free index, then
/// the linear contracting index for an operand (or the rhs free index for the output) — to
/// the logical index of a tensor whose dimensions play those roles (`roles[d]` = (0, 1 or 2,
/// position)), with the scope variables named `names` and bounded by `extents`.
pub fn scope_map(
    names: [&str; 3],
    extents: [i64; 3],
    parts: [&[i64]; 3],
    roles: &[(usize, usize)],
) -> IndexingMap {
    let dims: Vec<Variable> = (0..3)
        .map(|i| Variable::new(names[i], 0, extents[i].max(1) - 1))
        .collect();
    let split: Vec<Vec<Expr>> = (0..3)
        .map(|i| delinearize(Expr::var(i as u32), parts[i]))
        .collect();
    let results = roles.iter().map(|&(r, p)| split[r][p]).collect();
    IndexingMap::new(dims, vec![], vec![], results, vec![])
}

/// The map from `(bz, gm, gk)` (or `(bz, gk, gn)` for the rhs) to the operand's index.
pub fn operand_map(g: &GemmSpec, lhs: bool) -> IndexingMap {
    let op = if lhs { &g.lhs } else { &g.rhs };
    let mut roles = vec![(0, 0); op.spec.output.rank()];
    let free_role = if lhs { 1 } else { 2 };
    let k_role = if lhs { 2 } else { 1 };
    for (p, &d) in op.batch.iter().enumerate() {
        roles[d] = (0, p);
    }
    for (p, &d) in op.free.iter().enumerate() {
        roles[d] = (free_role, p);
    }
    for (p, &d) in op.contracting.iter().enumerate() {
        roles[d] = (k_role, p);
    }
    if lhs {
        scope_map(
            ["bz", "gm", "gk"],
            [g.b, g.m, g.k],
            [&g.batch_dims, &g.m_dims, &g.k_dims],
            &roles,
        )
    } else {
        scope_map(
            ["bz", "gk", "gn"],
            [g.b, g.k, g.n],
            [&g.batch_dims, &g.k_dims, &g.n_dims],
            &roles,
        )
    }
}

/// The map from `(bz, gm, gn)` to the dot's (and the output's) index.
pub fn output_map(g: &GemmSpec) -> IndexingMap {
    let nb = g.batch_dims.len();
    let nm = g.m_dims.len();
    let roles: Vec<(usize, usize)> = (0..g.dot.rank())
        .map(|d| {
            if d < nb {
                (0, d)
            } else if d < nb + nm {
                (1, d - nb)
            } else {
                (2, d - nb - nm)
            }
        })
        .collect();
    scope_map(
        ["bz", "gm", "gn"],
        [g.b, g.m, g.n],
        [&g.batch_dims, &g.m_dims, &g.n_dims],
        &roles,
    )
}

/// What every output element must be: the reference value, and how far a kernel
/// accumulating in `f32` may be from it.
pub struct Expected {
    /// Per output element, in physical order.
    pub want: Vec<f64>,
    pub tol: Vec<f64>,
    /// The largest `γ_K · Σ|a·b|` over the output (the dot's own error bound).
    pub max_bound: f64,
}

/// The unit roundoff of `f32`.
pub const U32: f64 = 1.0 / 16_777_216.0;

/// One unit in the last place of `t` at magnitude `x` (normal numbers; the smallest
/// subnormal step below).
pub fn ulp(t: ElemType, x: f64) -> f64 {
    let (mant, min_exp) = match t {
        ElemType::F16 => (10, -14),
        ElemType::BF16 => (7, -126),
        ElemType::F64 => (52, -1022),
        _ => (23, -126),
    };
    let x = x.abs();
    let e = if x > 0.0 && x.is_finite() {
        (x.log2().floor() as i32).max(min_exp)
    } else {
        min_exp
    };
    2f64.powi(e - mant)
}

/// Logical index → offset in a tensor's layout.
fn offset(strides: &[i64], idx: &[i64]) -> usize {
    idx.iter().zip(strides).map(|(i, s)| i * s).sum::<i64>() as usize
}

/// Writes the row-major delinearization of `v` over `extents` into `idx` at `dims`.
fn spread(idx: &mut [i64], dims: &[usize], extents: &[i64], mut v: i64) {
    for (&d, &e) in dims.iter().zip(extents).rev() {
        idx[d] = v % e.max(1);
        v /= e.max(1);
    }
}

fn each_index(dims: &[i64], f: &mut dyn FnMut(&[i64])) {
    if dims.contains(&0) {
        return;
    }
    let mut idx = vec![0i64; dims.len()];
    loop {
        f(&idx);
        let mut k = dims.len();
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < dims[k] {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// An operand, evaluated through its prologue, as `f64` in `[b][free][k]` order (the
/// contraction contiguous).
fn packed(g: &GemmSpec, lhs: bool, inputs: &[Vec<u8>]) -> Result<Vec<f64>, MapError> {
    let op = if lhs { &g.lhs } else { &g.rhs };
    let vals = Reference::new(&op.spec, inputs)?.output()?;
    let t = &op.spec.output;
    let strides = t.strides()?;
    let free = if lhs { g.m } else { g.n };
    let total =
        g.b.checked_mul(free)
            .and_then(|x| x.checked_mul(g.k))
            .ok_or_else(|| MapError::Overflow("the operand size".into()))?;
    let mut out = vec![0.0f64; total as usize];
    let free_dims = if lhs { &g.m_dims } else { &g.n_dims };
    let mut idx = vec![0i64; t.rank()];
    each_index(&[g.b, free, g.k], &mut |i| {
        // Each linear coordinate spread over the operand dimensions of its role.
        for (dims, ext, v) in [
            (&op.batch, &g.batch_dims, i[0]),
            (&op.free, free_dims, i[1]),
            (&op.contracting, &g.k_dims, i[2]),
        ] {
            spread(&mut idx, dims, ext, v);
        }
        let v = vals[offset(&strides, &idx)].to_f64(t.elem);
        out[((i[0] * free + i[1]) * g.k + i[2]) as usize] = v;
    });
    Ok(out)
}

/// The reference output of `g` on `inputs` and each element's tolerance:
///
/// - the dot: `s = Σ a·b` in `f64` (exact for these products, and within `f64`
///   rounding of exact for the sums), with `E = γ_K · Σ|a·b|` the bound on how far an `f32`
///   accumulation of the same products in any order may be, plus one unit in the last
///   place of the dot's type (the kernel's sum and the reference's may round to
///   neighbouring values of it);
/// - the epilogue, evaluated by the interpreter at `s` and at `s ± E` (rounded to the dot's
///   type): the kernel's value lies between those for an epilogue monotone over the
///   interval, and within the larger deviation for one that is smooth over it; plus
///   `2^-20` relative (a few `f32` units in the last place: the epilogue's transcendentals
///   differ by that between libraries) and one unit of a 16-bit output type.
pub fn expected(g: &GemmSpec, inputs: &[Vec<u8>]) -> Result<Expected, MapError> {
    let a = packed(g, true, inputs)?;
    let bt = packed(g, false, inputs)?;
    let k = g.k as usize;
    let ku = g.k as f64 * U32;
    let gamma = ku / (1.0 - ku).max(1e-3);
    let dot_n =
        g.b.checked_mul(g.m)
            .and_then(|x| x.checked_mul(g.n))
            .ok_or_else(|| MapError::Overflow("the dot's size".into()))? as usize;
    let mut sums = vec![0.0f64; dot_n];
    let mut bounds = vec![0.0f64; dot_n];
    // Rows of the output split over the machine's cores.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(16);
    let rows = (g.b * g.m) as usize;
    let per = rows.div_ceil(threads).max(1);
    let n = g.n as usize;
    std::thread::scope(|s| {
        for (chunk, (sc, bc)) in sums
            .chunks_mut(per * n)
            .zip(bounds.chunks_mut(per * n))
            .enumerate()
        {
            let (a, bt) = (&a, &bt);
            s.spawn(move || {
                for (r, (srow, brow)) in sc.chunks_mut(n).zip(bc.chunks_mut(n)).enumerate() {
                    let row = chunk * per + r;
                    let bz = row / g.m as usize;
                    let ar = &a[row * k..row * k + k];
                    for j in 0..n {
                        let br = &bt[(bz * n + j) * k..(bz * n + j) * k + k];
                        let (mut sum, mut abs) = (0.0f64, 0.0f64);
                        for q in 0..k {
                            let p = ar[q] * br[q];
                            sum += p;
                            abs += p.abs();
                        }
                        srow[j] = sum;
                        brow[j] = gamma * abs;
                    }
                }
            });
        }
    });
    let max_bound = bounds.iter().copied().fold(0.0, f64::max);
    // The dot's value at each of its logical indices, in its layout, at s - E', s, s + E'.
    let dot = &g.dot;
    let de = dot.elem;
    let dstrides = dot.strides()?;
    let nb = g.batch_dims.len();
    let nm = g.m_dims.len();
    let bd: Vec<usize> = (0..nb).collect();
    let md: Vec<usize> = (nb..nb + nm).collect();
    let nd: Vec<usize> = (nb + nm..dot.rank()).collect();
    let dot_index = |i: &[i64]| {
        let mut idx = vec![0i64; dot.rank()];
        spread(&mut idx, &bd, &g.batch_dims, i[0]);
        spread(&mut idx, &md, &g.m_dims, i[1]);
        spread(&mut idx, &nd, &g.n_dims, i[2]);
        idx
    };
    let mut acc: [Vec<u8>; 3] = [vec![], vec![], vec![]];
    for buf in acc.iter_mut() {
        *buf = vec![0u8; dot.num_bytes()? as usize];
    }
    let mut tol_dot = vec![0.0f64; dot_n];
    let mut lin = 0usize;
    each_index(&[g.b, g.m, g.n], &mut |i| {
        let (s, e) = (sums[lin], bounds[lin]);
        let e = e + ulp(de, s.abs() + e);
        tol_dot[lin] = e;
        let off = offset(&dstrides, &dot_index(i));
        for (buf, v) in acc.iter_mut().zip([s - e, s, s + e]) {
            write(buf, de, off, round_float(de, round_float(ElemType::F32, v)));
        }
        lin += 1;
    });
    let Some(epi) = &g.epilogue else {
        // The output is the dot: compare in its layout.
        let mut want = vec![0.0; dot_n];
        let mut tol = vec![0.0; dot_n];
        let mut lin = 0usize;
        each_index(&[g.b, g.m, g.n], &mut |i| {
            let off = offset(&dstrides, &dot_index(i));
            want[off] = read_value(&acc[1], de, off);
            tol[off] = tol_dot[lin];
            lin += 1;
        });
        return Ok(Expected {
            want,
            tol,
            max_bound,
        });
    };
    let mut outs = Vec::new();
    for buf in &acc {
        let mut all = inputs.to_vec();
        all.push(buf.clone());
        let r = Reference::new(epi, &all)?.output()?;
        outs.push(
            r.into_iter()
                .map(|x| x.to_f64(g.output.elem))
                .collect::<Vec<f64>>(),
        );
    }
    let oe = g.output.elem;
    let want = outs[1].clone();
    let tol = (0..want.len())
        .map(|i| {
            let w = want[i];
            let dev = (outs[0][i] - w).abs().max((outs[2][i] - w).abs());
            let dev = if dev.is_nan() { 0.0 } else { dev };
            let extra = if matches!(oe, ElemType::F16 | ElemType::BF16) {
                ulp(oe, w)
            } else {
                0.0
            };
            dev + w.abs() * (1.0 / 1_048_576.0) + extra
        })
        .collect();
    Ok(Expected {
        want,
        tol,
        max_bound,
    })
}

fn write(buf: &mut [u8], t: ElemType, off: usize, v: f64) {
    match t {
        ElemType::F32 => buf[off * 4..off * 4 + 4].copy_from_slice(&(v as f32).to_le_bytes()),
        _ => {
            let h = super::reference::half_bits(t, v);
            buf[off * 2..off * 2 + 2].copy_from_slice(&h.to_le_bytes());
        }
    }
}

/// Checks a kernel's output bytes (in the output's layout) against [`expected`]: the first
/// element outside its tolerance is an error naming it; else the largest error as a
/// fraction of its tolerance.
pub fn verify(g: &GemmSpec, out: &[u8], exp: &Expected) -> Result<f64, MapError> {
    let oe = g.output.elem;
    let mut worst = 0.0f64;
    for (i, (&w, &t)) in exp.want.iter().zip(&exp.tol).enumerate() {
        let got = read_value(out, oe, i);
        if got == w || (got.is_nan() && w.is_nan()) {
            continue;
        }
        let d = (got - w).abs();
        if d.is_nan() || d > t {
            return Err(MapError::Other(format!(
                "{}: output element {i} (physical offset) is {got} but the reference says {w} (tolerance {t:.3e})",
                g.name
            )));
        }
        if t > 0.0 {
            worst = worst.max(d / t);
        }
    }
    Ok(worst)
}
