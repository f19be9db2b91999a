//! Row normalizations with several warps a row (issue 28): a softmax, a layer norm and a
//! bf16 RMS norm over rows of 33 to 20000 elements, with 1, 2, 4 or 8 warps a row, one or
//! two rows a block and row counts that leave the last block part empty. Each CUDA kernel
//! runs on the CPU (`cuda_on_cpu.h`: the block's threads as fibers, `__syncthreads` a real
//! barrier, so a thread that skipped the warps' meeting in shared memory deadlocks and is
//! reported) and is checked element by element against the reference interpreter; NVRTC
//! and ptxas compile them where found (scripts/test-all installs them). Then the launch's
//! choice: XLA's warps and rows from a Triton fusion's `backend_config` (the H100 dumps'
//! six normalization fusions), ixmap's rule elsewhere, `block=` winning over both.

use ixmap::gpu::cuda_cpu::check_width;
use ixmap::gpu::launch::{self, DeviceLimits, Launch, LaunchConfig, Strategy as Kernel};
use ixmap::gpu::spec::{KernelSpec, XlaTile};
use proptest::prelude::*;

#[path = "common/fixed_cases.rs"]
mod fixed_cases;
use fixed_cases::run;
#[path = "common/row_launch.rs"]
mod row_launch;
use row_launch::{launch_rows, launch_with};
#[path = "common/hlo_specs.rs"]
mod hlo_specs;
use hlo_specs::{layer_norm_text, rms_bf16_text, spec, OPS};

#[derive(Copy, Clone, Debug)]
enum Norm {
    Softmax,
    LayerNorm,
    RmsBf16,
}

/// The fusion `k` over `rows` rows of `cols`, named `n`.
fn norm(k: Norm, rows: i64, cols: i64) -> KernelSpec {
    let (r, c) = (rows, cols);
    let body = match k {
        Norm::Softmax => format!(
            "n {{\n  p0 = f32[{r},{c}] parameter(0)\n  ninf = f32[] constant(-inf)\n  \
             mx = f32[{r}] reduce(p0, ninf), dimensions={{1}}, to_apply=maxf\n  \
             b = f32[{r},{c}] broadcast(mx), dimensions={{0}}\n  sub = f32[{r},{c}] subtract(p0, b)\n  \
             e = f32[{r},{c}] exponential(sub)\n  z = f32[] constant(0)\n  \
             sum = f32[{r}] reduce(e, z), dimensions={{1}}, to_apply=addf\n  \
             bs = f32[{r},{c}] broadcast(sum), dimensions={{0}}\n  ROOT d = f32[{r},{c}] divide(e, bs)\n}}\n"
        ),
        Norm::LayerNorm => layer_norm_text(r, c),
        Norm::RmsBf16 => rms_bf16_text(r, c),
    };
    spec(&format!("{OPS}{body}"), "n")
}

fn run_checked(s: &KernelSpec, l: &Launch, naive: bool) -> Result<(), String> {
    check_width(s, l, naive, false)
        .map(|_| ())
        .map_err(|e| format!("{} ({}): {e}", s.name, l.describe()))
}

#[test]
fn several_warps_a_row_run_and_match_the_reference() {
    let kinds = prop_oneof![
        Just(Norm::Softmax),
        Just(Norm::LayerNorm),
        Just(Norm::RmsBf16)
    ];
    let strategy = (
        kinds,
        33i64..20000,
        prop_oneof![Just(1i64), Just(2), Just(4), Just(8)],
        1i64..3,
        1i64..6,
        prop_oneof![Just(1i64), Just(4), Just(8)],
        prop_oneof![Just(1i64), Just(1), Just(2), Just(3), Just(4)],
    );
    run(12, strategy, |(kind, cols, w, rpb, rows, vector, per)| {
        let s = norm(kind, rows, cols);
        let l = launch_rows(&s, w, rpb, vector, per);
        run_checked(&s, &l, false).map_err(TestCaseError::fail)
    });
}

/// Fixed cases at the edges: the shortest row above a warp and the longest, a row one
/// past a multiple of the threads, every warps-per-row, a part-empty last block, and the
/// naive index arithmetic once.
#[test]
fn fixed_row_lengths_and_warps_match_the_reference() {
    for &(kind, rows, cols, w, rpb, vector) in &[
        (Norm::Softmax, 3, 33, 2, 2, 1),
        (Norm::Softmax, 3, 20000, 8, 1, 4),
        (Norm::Softmax, 5, 257, 8, 2, 1),
        (Norm::LayerNorm, 3, 1025, 4, 2, 1),
        (Norm::LayerNorm, 2, 4096, 4, 1, 4),
        (Norm::RmsBf16, 5, 2048, 2, 4, 8),
        (Norm::RmsBf16, 3, 20000, 1, 2, 8),
    ] {
        let s = norm(kind, rows, cols);
        let l = launch_with(&s, w, rpb, vector);
        run_checked(&s, &l, false).unwrap_or_else(|e| panic!("{e}"));
    }
    let s = norm(Norm::Softmax, 3, 1000);
    let l = launch_with(&s, 4, 2, 1);
    run_checked(&s, &l, true).unwrap_or_else(|e| panic!("naive: {e}"));
}

/// Several rows a thread (Triton's layout): every pass loops over the thread's rows, the
/// warps of all of them meet at one barrier a reduction. Cases: the dump's RMS norm shape
/// with a part-empty last block (5 rows on blocks of 4), a layer norm (scale and bias) of
/// several vectors a lane, a warp a row (no shared memory) with 2 groups a block, 3 rows a
/// thread (not a power of two), and the naive index arithmetic.
#[test]
fn several_rows_a_thread_match_the_reference() {
    for &(kind, rows, cols, w, rpb, vector, per) in &[
        (Norm::RmsBf16, 5, 2048, 8, 1, 8, 4),
        (Norm::LayerNorm, 7, 4096, 4, 1, 4, 4),
        (Norm::LayerNorm, 9, 1000, 1, 2, 4, 2),
        (Norm::Softmax, 10, 600, 2, 2, 4, 3),
        (Norm::RmsBf16, 2, 512, 2, 1, 8, 4),
    ] {
        let s = norm(kind, rows, cols);
        let l = launch_rows(&s, w, rpb, vector, per);
        assert!(l.describe().contains("rows per thread"), "{}", l.describe());
        run_checked(&s, &l, false).unwrap_or_else(|e| panic!("{kind:?} {rows}x{cols}: {e}"));
        let src = ixmap::gpu::emit::cuda::emit(&s, &l, false)
            .expect("emits")
            .source;
        assert_eq!(
            src.matches("__syncthreads();").count(),
            if w > 1 {
                match kind {
                    Norm::Softmax | Norm::LayerNorm => 2,
                    Norm::RmsBf16 => 1,
                }
            } else {
                0
            },
            "one barrier a reduction, for all the thread's rows:\n{src}"
        );
    }
    let s = norm(Norm::LayerNorm, 5, 1024);
    let l = launch_rows(&s, 4, 1, 4, 4);
    run_checked(&s, &l, true).unwrap_or_else(|e| panic!("naive: {e}"));
    // 64-bit index arithmetic: each thread's rows declared in the wide type.
    let s = norm(Norm::RmsBf16, 5, 2048);
    let l = launch_rows(&s, 8, 1, 8, 4);
    check_width(&s, &l, false, true).unwrap_or_else(|e| panic!("64-bit: {e}"));
}

/// The kernel's warps meet in shared memory through a barrier, and every thread of the
/// row folds the warps in one fixed order; NVRTC and ptxas take the kernels (skipped when
/// they are not found, as the CUDA sweep).
#[test]
fn several_warps_a_row_compile_for_cuda() {
    let mut compiled = 0;
    for w in [1i64, 2, 4, 8] {
        for (kind, cols, vector) in [
            (Norm::Softmax, 1000, 4),
            (Norm::LayerNorm, 4096, 4),
            (Norm::RmsBf16, 2048, 8),
        ] {
            let s = norm(kind, 6, cols);
            let l = launch_with(&s, w, 2, vector);
            let e = ixmap::gpu::emit::cuda::emit(&s, &l, false).expect("emits");
            if w > 1 {
                assert!(e.source.contains("__syncthreads();"), "{}", e.source);
                assert!(
                    e.source.contains(&format!("for (int k = 1; k < {w}; ++k)")),
                    "{}",
                    e.source
                );
            } else {
                assert!(!e.source.contains("__syncthreads"), "{}", e.source);
            }
            if let Some(k) = ixmap::gpu::nvcc::resources(&e.source) {
                compiled += 1;
                assert_eq!(k.len(), 1, "{kind:?} w={w}");
                // The row's kept vectors stay in registers: at most a pointer's 8 bytes go to
                // the stack, where ptxas trades them for a fuller SM (the layer norm of 8 warps
                // a row: 32 registers, 4 blocks of 512 threads, instead of 40 and 3 blocks).
                assert!(k[0].spill_stores <= 8, "{kind:?} w={w}: {}", k[0].summary());
            } else if ixmap::gpu::nvcc::shared_nvrtc().is_some()
                && ixmap::gpu::nvcc::find_ptxas().is_some()
            {
                let c = ixmap::gpu::nvcc::resource_comment(&e.source).unwrap_or_default();
                panic!("{kind:?} w={w}: does not compile:\n{c}\n{}", e.source);
            }
        }
    }
    eprintln!("row warps: {compiled} of 12 kernels compiled by NVRTC and ptxas (0: not found)");
}

/// ixmap's rule without XLA's tiling: a warp a row up to 1024 elements, then at most 32
/// elements a thread, up to 8 warps.
#[test]
fn the_rule_gives_long_rows_more_warps() {
    for (cols, w) in [
        (33, 1),
        (512, 1),
        (1024, 1),
        (1025, 2),
        (2048, 2),
        (4096, 4),
        (8192, 8),
        (20000, 8),
    ] {
        let s = norm(Norm::Softmax, 2, cols);
        let split = launch::row_split(&s, cols);
        assert_eq!(split.warps_per_row, w, "{cols}: {}", split.rule);
        assert_eq!(split.block, None);
        let (l, d) = launch::choose_default(&s, None, DeviceLimits::H100).unwrap();
        assert_eq!(l.row_threads, 32 * w, "{cols}: {}", l.describe());
        assert_eq!(l.block[0], 128.max(32 * w), "{cols}: {}", l.describe());
        assert!(d.rules.iter().any(|r| *r == split.rule), "{:?}", d.rules);
    }
    // `block=` wins: a block of 2 warps gives a row of 4096 its 2 warps, not 4.
    let s = norm(Norm::Softmax, 2, 4096);
    let cfg = LaunchConfig {
        block: 64,
        ..LaunchConfig::default()
    };
    let l = launch::choose(&s, cfg, None).unwrap();
    assert_eq!((l.block[0], l.row_threads), (64, 64), "{}", l.describe());
    // .. and 3 warps (not a multiple of the 4 the rule wants): 3 warps a row.
    let cfg = LaunchConfig {
        block: 96,
        ..LaunchConfig::default()
    };
    let l = launch::choose(&s, cfg, None).unwrap();
    assert_eq!((l.block[0], l.row_threads), (96, 96), "{}", l.describe());
    run_checked(&s, &l, false).unwrap_or_else(|e| panic!("{e}"));
}

/// `s` with XLA's Triton tiling of `warps` warps and output tile `sizes`, and the default
/// launch that takes it, with its rules.
fn tiled(s: &mut KernelSpec, warps: i64, sizes: &[i64]) -> (Launch, Vec<String>) {
    s.xla_tile = Some(XlaTile {
        num_warps: warps,
        sizes: sizes.to_vec(),
        num_stages: 1,
    });
    let (l, d) = launch::choose_default(s, None, DeviceLimits::H100).unwrap();
    (l, d.rules)
}

/// XLA's tiling from `backend_config` wins over the rule: its warps a block and rows a
/// tile, in Triton's blocked layout where the fusion reads an operand broadcast along the
/// rows (the RMS norm's scale), else shared among the tile's rows; a tile that is not
/// whole rows is ignored.
#[test]
fn xla_tiling_gives_warps_and_rows() {
    let mut s = norm(Norm::RmsBf16, 6, 2048);
    let (l, d) = tiled(&mut s, 8, &[4, 2048]);
    assert_eq!(
        (l.block[0], l.row_threads, l.rows_per_thread, l.grid[0]),
        (256, 256, 4, 2),
        "{}",
        l.describe()
    );
    assert!(d.iter().any(|r| r.contains("backend_config")), "{:?}", d);
    run_checked(&s, &l, false).unwrap_or_else(|e| panic!("{e}"));
    run_checked(&s, &l, true).unwrap_or_else(|e| panic!("{e}"));
    // More rows in the tile than warps: a warp a row, XLA's block (a warp a row needs no
    // shared memory, so not Triton's layout).
    let (l, _) = tiled(&mut s, 2, &[4, 2048]);
    assert_eq!(
        (l.block[0], l.row_threads, l.rows_per_thread),
        (64, 32, 1),
        "{}",
        l.describe()
    );
    run_checked(&s, &l, false).unwrap_or_else(|e| panic!("{e}"));
    // A tile of 64 rows on 8 warps would give each thread 64 rows: past the most
    // (launch::MAX_ROWS_PER_THREAD), the warps are shared among the rows instead.
    let (l, _) = tiled(&mut s, 8, &[64, 2048]);
    assert_eq!(
        (l.block[0], l.row_threads, l.rows_per_thread),
        (256, 32, 1),
        "{}",
        l.describe()
    );
    // Another block than XLA's 8 warps: the rows each their own.
    let _ = tiled(&mut s, 8, &[4, 2048]);
    let cfg = LaunchConfig {
        block: 128,
        vector: 8,
        ..LaunchConfig::default()
    };
    let l = launch::choose(&s, cfg, None).unwrap();
    assert_eq!(l.rows_per_thread, 1, "{}", l.describe());
    // A softmax reads no operand broadcast along the rows: XLA's 4 warps share the tile's
    // 4 rows, a warp a row (no shared memory), as before.
    let mut sm = norm(Norm::Softmax, 8, 512);
    let (l, _) = tiled(&mut sm, 4, &[4, 512]);
    assert_eq!(
        (l.block[0], l.row_threads, l.rows_per_thread),
        (128, 32, 1),
        "{}",
        l.describe()
    );
    // Not whole rows: the rule (2 warps a row of 2048, blocks of 4 warps).
    let (l, d) = tiled(&mut s, 8, &[4, 1000]);
    assert_eq!((l.block[0], l.row_threads), (128, 64), "{}", l.describe());
    assert!(!d.iter().any(|r| r.contains("backend_config")));
}

/// The six Triton normalization fusions of the H100 dumps: the launch takes XLA's warps
/// and rows from each one's `backend_config`.
#[test]
fn the_dumps_triton_normalizations_take_xlas_tiling() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/xla-dumps/h100-jax-0.11.2");
    // (file, fusion, block, warps a row, rows a thread, grid): the norms whose rows take
    // several warps, and read a scale (and a bias) broadcast along the rows, in Triton's
    // layout of the tile; the layer norm's 4 warps on 4 rows a warp a row, as the
    // softmaxes.
    let want = [
        ("module_11916.jit_layernorm", "fusion.4", 128, 1, 1, 1024),
        ("module_12580.jit_rmsnorm_bf16", "fusion.3", 256, 8, 4, 1024),
        (
            "module_13243.jit_attention",
            "triton_softmax.2",
            128,
            1,
            1,
            4096,
        ),
        (
            "module_15893.jit_block",
            "triton_softmax.8",
            128,
            1,
            1,
            4096,
        ),
        ("module_15893.jit_block", "fusion.23", 128, 4, 2, 1024),
        (
            "module_15893.jit_block",
            "triton_softmax.6",
            128,
            2,
            1,
            1024,
        ),
    ];
    for (file, fusion, block, w, per, grid) in want {
        let path = dir.join(format!("{file}.sm_9.0a_gpu_after_optimizations.txt"));
        let text = std::fs::read_to_string(&path).expect("the dump is in tests/data");
        let ws = ixmap::dump::load_module(&text).expect("loads");
        let s = ixmap::gpu::sweep::spec_for(&ws, fusion)
            .expect("the fusion is there")
            .expect("adapts");
        assert!(s.xla_tile.is_some(), "{fusion}: no tiling read");
        let (l, d) = launch::choose_default(&s, None, DeviceLimits::H100).unwrap();
        assert_eq!(l.strategy, Kernel::RowNormalization, "{fusion}");
        assert_eq!(
            (l.block[0], l.row_threads / 32, l.rows_per_thread, l.grid[0]),
            (block, w, per, grid),
            "{fusion}: {} {:?}",
            l.describe(),
            d.rules
        );
        assert!(
            d.rules.iter().any(|r| r.contains("backend_config")),
            "{fusion}: {:?}",
            d.rules
        );
        // The thread's rows are a loop of the launch: each a load of every thread of the
        // warp, none taken for a loop of the fusion; every read and the write coalesced.
        let rep = ixmap::gpu::coalescing::analyse(&s, &l).unwrap();
        for o in &rep.operands {
            assert!(o.coalesced, "{fusion}: {} not coalesced", o.label);
            assert!(
                o.assumed.iter().all(|a| a.name != "i"),
                "{fusion}: {} assumes the thread's row",
                o.label
            );
        }
    }
}

/// Triton's blocked layout of a row-major tile (`launch::triton_row_layout`): a warp's 32
/// threads along the row, then as many warps as the row has room for, the rest on other
/// rows; each thread repeats over the tile's rows. The dumps' norms, and the edges.
#[test]
fn triton_layouts_of_row_tiles() {
    // (cols, tile rows, warps, vector) -> (warps along the row, rows a thread)
    for (cols, rows, warps, v, want) in [
        (2048, 4, 8, 8, Some((8, 4))), // the RMS norm: 8 warps along a row of 2048 bf16
        (1024, 4, 4, 4, Some((4, 4))), // the layer norm
        (1024, 2, 4, 4, Some((4, 2))), // the transformer block's layer norm
        (512, 4, 4, 4, Some((4, 4))),  // the attention softmax's tile
        (128, 16, 4, 4, Some((1, 4))), // a row of one warp's accesses: 4 warps, 4 rows each
        (2048, 3, 8, 8, Some((8, 3))), // rows a thread need not be a power of two
        (256, 8, 8, 4, Some((2, 2))),  // 2 warps fill the row, 4 groups of them, 8 rows
        (1000, 4, 4, 4, None),         // not a whole number of a warp's accesses
        (64, 4, 4, 4, None),           // shorter than a warp's accesses
        (256, 3, 8, 4, None),          // 4 row groups do not divide 3 rows
    ] {
        assert_eq!(
            launch::triton_row_layout(cols, rows, warps, v),
            want,
            "{cols} x {rows} on {warps} warps, {v} a thread"
        );
    }
}
