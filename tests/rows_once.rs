//! Row normalizations read their row from memory once (issue 28): where the passes over a
//! row (the reductions', then the elements') read an input at the same 16-byte vectors,
//! the first pass keeps them in a register array and the later passes read the registers,
//! as XLA's Triton kernels keep the row's tile in registers. Up to 8 vectors a lane an
//! input and 16 for all inputs together; past that budget each pass reads the row again.
//!
//! Each kernel's source is counted (the loads of each input), run on the CPU
//! (`cuda_on_cpu.h`) and checked element by element against the reference interpreter,
//! with simplified and naive index arithmetic; NVRTC and ptxas compile it where found, with
//! no spills.

use ixmap::gpu::cuda_cpu::check_width;
use ixmap::gpu::launch::{self, DeviceLimits, Launch, Strategy};
use ixmap::gpu::spec::{KernelSpec, XlaTile};

#[path = "common/row_launch.rs"]
mod row_launch;
use row_launch::launch_with;
#[path = "common/hlo_specs.rs"]
mod hlo_specs;
use hlo_specs::{layer_norm_text, rms_bf16_text, spec, OPS};

/// The CUDA source of `s` under `l`.
fn source(s: &KernelSpec, l: &Launch, naive: bool) -> String {
    ixmap::gpu::emit::cuda::emit(s, l, naive)
        .expect("emits")
        .source
}

/// The statements of `src` that read input `k` from memory: its 16-byte loads
/// (`*reinterpret_cast<const float4 *>(p0 + ..)`) and its element loads (`p0[..]`).
fn loads_of(src: &str, k: usize) -> usize {
    let vector = format!(" *>(p{k} + ");
    let element = format!("p{k}[");
    src.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| l.matches(&vector).count() + l.matches(&element).count())
        .sum()
}

/// The register arrays the kernel keeps rows in (`float4 x1[5];`).
fn kept_arrays(src: &str) -> usize {
    src.lines()
        .filter(|l| {
            let t = l.trim();
            (t.starts_with("float4 x") || t.starts_with("uint4 x")) && t.ends_with("];")
        })
        .count()
}

/// Runs `s` under `l` on the CPU against the reference, simplified and naive, and compiles
/// it with NVRTC and ptxas where found: no spills.
fn verified(s: &KernelSpec, l: &Launch) {
    for naive in [false, true] {
        check_width(s, l, naive, false).unwrap_or_else(|e| {
            panic!(
                "{} ({}, naive {naive}): {e}\n{}",
                s.name,
                l.describe(),
                source(s, l, naive)
            )
        });
    }
    let src = source(s, l, false);
    if let Some(k) = ixmap::gpu::nvcc::resources(&src) {
        assert_eq!(k.len(), 1);
        assert_eq!(
            k[0].spill_stores + k[0].spill_loads,
            0,
            "{}: {}\n{src}",
            s.name,
            k[0].summary()
        );
    } else if ixmap::gpu::nvcc::shared_nvrtc().is_some() && ixmap::gpu::nvcc::find_ptxas().is_some()
    {
        let c = ixmap::gpu::nvcc::resource_comment(&src).unwrap_or_default();
        panic!("{}: does not compile:\n{c}\n{src}", s.name);
    }
}

fn softmax(r: i64, c: i64) -> KernelSpec {
    spec(
        &format!(
            "{OPS}n {{\n  p0 = f32[{r},{c}] parameter(0)\n  ninf = f32[] constant(-inf)\n  \
             mx = f32[{r}] reduce(p0, ninf), dimensions={{1}}, to_apply=maxf\n  \
             b = f32[{r},{c}] broadcast(mx), dimensions={{0}}\n  sub = f32[{r},{c}] subtract(p0, b)\n  \
             e = f32[{r},{c}] exponential(sub)\n  z = f32[] constant(0)\n  \
             sum = f32[{r}] reduce(e, z), dimensions={{1}}, to_apply=addf\n  \
             bs = f32[{r},{c}] broadcast(sum), dimensions={{0}}\n  ROOT d = f32[{r},{c}] divide(e, bs)\n}}\n"
        ),
        "n",
    )
}

fn layer_norm(r: i64, c: i64) -> KernelSpec {
    spec(&format!("{OPS}{}", layer_norm_text(r, c)), "n")
}

fn rms_bf16(r: i64, c: i64) -> KernelSpec {
    spec(&format!("{OPS}{}", rms_bf16_text(r, c)), "n")
}

/// The dumps' bf16 RMS norm (fusion.3 of the H100 rmsnorm module, XLA's tile of 4 rows of
/// 2048 on 8 warps, in Triton's layout: each thread its vector of 4 rows), on 6 rows so the
/// last block is part empty: the sum's pass loads the rows, the elements' pass reads its
/// registers.
#[test]
fn rms_norm_reads_its_row_once() {
    let mut s = rms_bf16(6, 2048);
    s.xla_tile = Some(XlaTile {
        num_warps: 8,
        sizes: vec![4, 2048],
        num_stages: 1,
    });
    let (l, _) = launch::choose_default(&s, None, DeviceLimits::H100).unwrap();
    assert_eq!(
        (l.block[0], l.row_threads, l.rows_per_thread),
        (256, 256, 4),
        "{}",
        l.describe()
    );
    for naive in [false, true] {
        let src = source(&s, &l, naive);
        assert_eq!(loads_of(&src, 0), 1, "the row of x, once:\n{src}");
        assert_eq!(loads_of(&src, 1), 1, "the scale, once:\n{src}");
        assert_eq!(kept_arrays(&src), 1, "{src}");
        assert!(src.contains("uint4 x1[4][1];"), "{src}");
        assert!(src.contains("(the row is read once)"), "{src}");
    }
    verified(&s, &l);
}

/// The dump's own fusion at its own shape (bf16[4096,2048], ixmap's default launch): one
/// load of the row in the source.
#[test]
fn the_dumps_rms_norm_reads_its_row_once() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/data/xla-dumps/h100-jax-0.11.2/module_12580.jit_rmsnorm_bf16.sm_9.0a_gpu_after_optimizations.txt",
    );
    let mut session = ixmap::Session::new();
    for o in session.execute(&format!("load {}", path.display())) {
        assert!(o.result.is_ok(), "{:?}", o.result);
    }
    let Some(ixmap::hlo::workspace::Target::Computation(c)) =
        session.hlo.resolve("fused_computation.1")
    else {
        panic!("fused_computation.1 is defined")
    };
    let s = ixmap::gpu::from_hlo::from_computation(&session.hlo.module, c).expect("adapts");
    let (l, _) = launch::choose_default(&s, None, DeviceLimits::H100).unwrap();
    assert_eq!(l.strategy, Strategy::RowNormalization, "{}", l.describe());
    let src = source(&s, &l, false);
    // p1 is the row (param_1.10), p0 the scale.
    assert_eq!(loads_of(&src, 1), 1, "{src}");
    assert_eq!(loads_of(&src, 0), 1, "{src}");
    assert!(src.contains("uint4 x1[4];"), "{src}");
}

/// A softmax's three passes (max, sum of `exp(x - max)`, elements) over rows that leave
/// lanes idle (2500 = 4 warps of 4 elements, 5 steps, the last part empty): the max's pass
/// loads, the others read its registers under the same guards.
#[test]
fn softmax_reads_its_row_once_across_three_passes() {
    for (rows, cols, w, rpb, steps) in [(3, 2500, 4, 1, 5), (9, 300, 1, 4, 3), (5, 1024, 1, 2, 8)] {
        let s = softmax(rows, cols);
        let l = launch_with(&s, w, rpb, 4);
        let src = source(&s, &l, false);
        assert_eq!(loads_of(&src, 0), 1, "{src}");
        assert!(src.contains(&format!("float4 x1[{steps}];")), "{src}");
        assert_eq!(
            src.matches("loaded by an earlier pass over the row (the row is read once)")
                .count(),
            2,
            "{src}"
        );
        verified(&s, &l);
    }
}

/// A layer norm reads `x` in its mean's, its variance's and its elements' passes: once.
#[test]
fn layer_norm_reads_its_row_once() {
    let s = layer_norm(5, 1024);
    let l = launch_with(&s, 1, 2, 4);
    let src = source(&s, &l, false);
    assert_eq!(loads_of(&src, 0), 1, "{src}");
    assert_eq!(loads_of(&src, 1), 1, "{src}");
    assert!(src.contains("float4 x1[8];"), "{src}");
    verified(&s, &l);
}

/// Past the budget: a row of 16384 f32 on 8 warps is 16 vectors a lane (more than 8), so
/// each of the softmax's passes reads the row again, as before.
#[test]
fn a_long_row_past_the_budget_is_read_by_each_pass() {
    let s = softmax(2, 16384);
    let l = launch_with(&s, 8, 1, 4);
    let src = source(&s, &l, false);
    assert_eq!(loads_of(&src, 0), 3, "{src}");
    assert_eq!(kept_arrays(&src), 0, "{src}");
    assert!(!src.contains("read once"), "{src}");
    verified(&s, &l);
}

/// Past the budget of all inputs together: three rows each read by two passes (its max and
/// the elements), 8 vectors a lane each. The first two are kept (16 vectors), the third is
/// read twice.
#[test]
fn inputs_past_the_total_budget_are_read_again() {
    let (r, c) = (3, 1024);
    let mut body = format!("{OPS}n {{\n  ninf = f32[] constant(-inf)\n");
    for k in 0..3 {
        body += &format!(
            "  p{k} = f32[{r},{c}] parameter({k})\n  \
             m{k} = f32[{r}] reduce(p{k}, ninf), dimensions={{1}}, to_apply=maxf\n  \
             b{k} = f32[{r},{c}] broadcast(m{k}), dimensions={{0}}\n  \
             d{k} = f32[{r},{c}] subtract(p{k}, b{k})\n"
        );
    }
    body +=
        &format!("  s01 = f32[{r},{c}] add(d0, d1)\n  ROOT o = f32[{r},{c}] add(s01, d2)\n}}\n");
    let s = spec(&body, "n");
    let l = launch_with(&s, 1, 4, 4);
    let src = source(&s, &l, false);
    let loads: Vec<usize> = (0..3).map(|k| loads_of(&src, k)).collect();
    assert_eq!(loads, vec![1, 1, 2], "{src}");
    assert_eq!(kept_arrays(&src), 2, "{src}");
    verified(&s, &l);
}
