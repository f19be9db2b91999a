//! `emit`, `check` and `bench` of a fusion with a `dot`: the GEMM kernel of `gpu::gemm`
//! under a block tiling — `tile=(BM, BN, BK)`, `warps=N`, `stages=N`, each defaulting to
//! ixmap's tiling for its f32 kernel (`GemmSpec::simt_tiling`: the largest tile that gives
//! every SM of an H100 a block). XLA's Triton tiling, printed in the fusion's
//! `backend_config`, is shown by `dump` but sized for tensor cores.

use super::cmd_gpu::fusion_name;
use super::{Args, Session};
use crate::gpu::bench::gemm as run;
use crate::gpu::emit::gemm::{self as emit, Config};
use crate::gpu::gemm::{for_name, GemmSpec};
use crate::syntax::Diagnostic;
use crate::value::Value;

/// The GEMM of the fusion the first argument names, when it has a dot.
pub(super) fn gemm_of(s: &Session, a: &Args) -> Result<Option<GemmSpec>, Diagnostic> {
    let (name, span) = fusion_name(a)?;
    match for_name(&s.hlo, &name) {
        None => Ok(None),
        Some(Ok(g)) => Ok(Some(g)),
        Some(Err(m)) => Err(Diagnostic::at(m, span)),
    }
}

/// The tiling from `tile=`, `warps=`, `stages=` over the fusion's default, checked, and
/// `naive`; with where the tiling came from.
fn config(g: &GemmSpec, a: &Args) -> Result<(Config, &'static str), Diagnostic> {
    if let Some((key, span)) = super::cmd_gpu::launch_option_given(a) {
        return Err(Diagnostic::at(
            format!(
                "`{key}=` does not apply: {} is a dot fusion, computed by a GEMM kernel",
                g.name
            ),
            span,
        )
        .with_help("a GEMM takes tile=(BM, BN, BK), warps=N and stages=N"));
    }
    let bad = |key: &str, m: String| Err(Diagnostic::at(m, a.kv_span(key)));
    let (base, _, origin) = g.tiling(None).map_err(|m| Diagnostic::at(m, a.span()))?;
    let mut t = base;
    let mut given = false;
    if let Some(v) = a.kv_tuple("tile")? {
        match v.as_slice() {
            [m, n] => (t.bm, t.bn) = (*m, *n),
            [m, n, k] => (t.bm, t.bn, t.bk) = (*m, *n, *k),
            _ => {
                return bad(
                    "tile",
                    format!(
                        "`tile=` of a GEMM is (BM, BN) or (BM, BN, BK), not {} sizes",
                        v.len()
                    ),
                )
            }
        }
        given = true;
    }
    if let Some(w) = a.kv_int("warps")? {
        t.warps = w;
        given = true;
    }
    if let Some(st) = a.kv_int("stages")? {
        t.stages = st;
        given = true;
    }
    let split = t.split().map_err(|m| {
        let key = ["tile", "warps", "stages"]
            .into_iter()
            .find(|k| a.kv(k).is_some())
            .unwrap_or("tile");
        Diagnostic::at(m, a.kv_span(key))
    })?;
    let origin = if given && t != base { "given" } else { origin };
    Ok((
        Config {
            tiling: t,
            split,
            naive: a.flag("naive"),
        },
        origin,
    ))
}

fn map_err<'a>(a: &'a Args<'a>) -> impl Fn(crate::MapError) -> Diagnostic + 'a {
    move |e| Diagnostic::at(e.to_string(), a.span())
}

/// `emit FUSION [target=cuda|cpu] [tile=..] [warps=N] [stages=N] [naive]`.
pub(super) fn emit(a: &Args, g: GemmSpec) -> Result<Value, Diagnostic> {
    let (c, _) = config(&g, a)?;
    let cuda = match a.kv_word("target")?.as_deref() {
        None | Some("cuda") | Some("gpu") => true,
        Some("cpu") => false,
        Some(w) => {
            return Err(Diagnostic::at(
                format!("`target=` takes cuda or cpu, not `{w}`"),
                a.kv_span("target"),
            ))
        }
    };
    let e = if cuda {
        let (mut e, _) = emit::cuda(&g, &c).map_err(map_err(a))?;
        let ([gx, gy], block) = emit::launch_dims(&g, &c.tiling);
        let at = (block, gx.saturating_mul(gy));
        if let Some(r) = crate::gpu::nvcc::resource_comment_for(&e.source, Some(at)) {
            e.source += &r;
        }
        e
    } else {
        emit::cpu(&g, &c).map_err(map_err(a))?
    };
    Ok(Value::Kernel(crate::value::Kernel {
        name: e.name,
        target: if cuda { "cuda" } else { "cpu" }.into(),
        source: e.source,
    }))
}

/// `check FUSION [tile=..] [warps=N] [stages=N] [naive] [target=cuda|cpu]`: the CUDA kernel run
/// on the CPU (or, with `target=cpu`, the host C kernel).
pub(super) fn check(a: &Args, g: GemmSpec) -> Result<Value, Diagnostic> {
    let (c, origin) = config(&g, a)?;
    match a.kv_word("target")?.as_deref() {
        None | Some("cuda") | Some("gpu") => {}
        Some("cpu") => {
            let worst = run::check_c(&g, &c).map_err(map_err(a))?;
            return Ok(Value::Text(format!(
                "{}: the host C GEMM kernel (row blocks of {}) ran; every element of {} is within its bound of the reference (f32 accumulation over K = {}; largest error {:.0}% of its bound)",
                g.name,
                emit::cpu_rows(&c.tiling),
                g.output.shape_text(),
                g.k,
                worst * 100.0
            )));
        }
        Some(w) => {
            return Err(Diagnostic::at(
                format!("`target=` takes cuda or cpu, not `{w}`"),
                a.kv_span("target"),
            ))
        }
    }
    let (bits, worst) = run::check_cuda_on_cpu(&g, &c, false).map_err(map_err(a))?;
    let ([gx, gy], block) = emit::launch_dims(&g, &c.tiling);
    Ok(Value::Text(format!(
        "{}: the CUDA GEMM kernel ({}, {origin}; grid {gx} x {gy}, block {block}, {bits}-bit indices{}) ran on the CPU; every element of {} is within its bound of the reference (f32 accumulation over K = {}; largest error {:.0}% of its bound)",
        g.name,
        c.tiling.describe(),
        if c.naive { ", naive maps" } else { "" },
        g.output.shape_text(),
        g.k,
        worst * 100.0
    )))
}

/// `bench FUSION [device=auto|gpu|cpu] [reps=N] [threads=N] [tile=..] [warps=N] [stages=N]`.
pub(super) fn bench(a: &Args, g: GemmSpec) -> Result<Value, Diagnostic> {
    let (c, origin) = config(&g, a)?;
    let on_gpu = match a.kv_word("device")?.as_deref() {
        None | Some("auto") => crate::gpu::bench::cuda::available().is_ok(),
        Some("gpu") | Some("cuda") => true,
        Some("cpu") => false,
        Some(w) => {
            return Err(Diagnostic::at(
                format!("`device=` takes auto, gpu or cpu, not `{w}`"),
                a.kv_span("device"),
            ))
        }
    };
    let reps = match a.kv_int("reps")? {
        None => 10,
        Some(n) if (1..=10_000).contains(&n) => n as usize,
        Some(n) => {
            return Err(Diagnostic::at(
                format!("reps={n} is not in [1, 10000]"),
                a.kv_span("reps"),
            ))
        }
    };
    let threads = match a.kv_int("threads")? {
        None => 0,
        Some(n) if on_gpu => {
            return Err(Diagnostic::at(
                format!("`threads={n}` is the CPU kernels' thread count; on the GPU a GEMM block has warps="),
                a.kv_span("threads"),
            ))
        }
        Some(n) if (1..=1024).contains(&n) => n as usize,
        Some(n) => {
            return Err(Diagnostic::at(
                format!("threads={n} is not in [1, 1024]"),
                a.kv_span("threads"),
            ))
        }
    };
    let req = run::Request {
        on_gpu,
        reps,
        threads,
        origin,
    };
    let report = run::bench(&g, &c, &req).map_err(|e| {
        Diagnostic::at(
            e.to_string(),
            if on_gpu {
                a.kv_span("device")
            } else {
                a.span()
            },
        )
    })?;
    Ok(Value::Bench(report))
}
