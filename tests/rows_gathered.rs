//! The row kernel's rows as the reductions see them, and row reductions of several warps,
//! run on the CPU and checked element by element against the reference.
//!
//! Gathered rows: a layer norm of `x[b, t, h * d + e]` over its last dimension, written
//! out with the head dimension `h` moved out of the row (`[b, h, t, e]` and other orders,
//! random sizes). The reductions depend on `(b, t)` alone, so the kernel's row is every
//! output element of one `(b, t)` (`h * d` of them, spread over the output) rather than an
//! output row of `d`. The launch must say so (rows = b * t) and both the CUDA kernel (on
//! the CPU) and the C kernel must match the reference.
//!
//! Several warps a row: row sums and maxima of random lengths (up to 20000, so up to 1024
//! threads along a row, XLA's `num_threads_x`) and row counts that leave the last block
//! part empty, so the warps' shared-memory step and the guards around it are exercised.

use ixmap::gpu::cuda_cpu::{check, check_c};
use ixmap::gpu::launch::{self, Strategy as Kernel};
use proptest::prelude::*;

#[path = "common/fixed_cases.rs"]
mod fixed_cases;
use fixed_cases::run;
#[path = "common/hlo_specs.rs"]
#[allow(dead_code)]
mod hlo_specs;
use hlo_specs::{spec, OPS as ADD};

/// The layer norm of `x: f32[b, t, h * d]` over its last dimension, scaled by `g[h * d]`,
/// written as `[b, t, h, d]` transposed by `perm` (which keeps `d` last).
fn layer_norm(b: i64, t: i64, h: i64, d: i64, perm: [usize; 4]) -> String {
    let k = h * d;
    let dims = [b, t, h, d];
    let out: Vec<String> = perm.iter().map(|&p| dims[p].to_string()).collect();
    let perm_s: Vec<String> = perm.iter().map(|p| p.to_string()).collect();
    format!(
        "{ADD}ln {{\n  x = f32[{b},{t},{k}] parameter(0)\n  g = f32[{k}] parameter(1)\n  \
         z = f32[] constant(0)\n  s = f32[{b},{t}] reduce(x, z), dimensions={{2}}, to_apply=addf\n  \
         kk = f32[] constant({inv})\n  kb = f32[{b},{t}] broadcast(kk), dimensions={{}}\n  \
         m = f32[{b},{t}] multiply(s, kb)\n  mb = f32[{b},{t},{k}] broadcast(m), dimensions={{0,1}}\n  \
         c = f32[{b},{t},{k}] subtract(x, mb)\n  sq = f32[{b},{t},{k}] multiply(c, c)\n  \
         v = f32[{b},{t}] reduce(sq, z), dimensions={{2}}, to_apply=addf\n  \
         vm = f32[{b},{t}] multiply(v, kb)\n  e = f32[] constant(1e-05)\n  \
         eb = f32[{b},{t}] broadcast(e), dimensions={{}}\n  ve = f32[{b},{t}] add(vm, eb)\n  \
         r = f32[{b},{t}] rsqrt(ve)\n  rb = f32[{b},{t},{k}] broadcast(r), dimensions={{0,1}}\n  \
         n = f32[{b},{t},{k}] multiply(c, rb)\n  gb = f32[{b},{t},{k}] broadcast(g), dimensions={{2}}\n  \
         y = f32[{b},{t},{k}] multiply(n, gb)\n  yb = f32[{b},{t},{h},{d}] bitcast(y)\n  \
         ROOT o = f32[{}] transpose(yb), dimensions={{{}}}\n}}\n",
        out.join(","),
        perm_s.join(","),
        inv = 1.0 / k as f64,
    )
}

#[test]
fn gathered_rows_run_and_match() {
    let strategy = (
        1i64..3,
        1i64..6,
        2i64..5,
        prop::sample::select(vec![4i64, 8, 16, 32, 48, 64]),
        prop::sample::select(vec![
            [0usize, 2, 1, 3],
            [2, 0, 1, 3],
            [2, 1, 0, 3],
            [0, 1, 2, 3],
        ]),
    );
    run(8, strategy, |(b, t, h, d, perm)| {
        let sp = spec(&layer_norm(b, t, h, d, perm), "ln");
        let (l, _) =
            launch::choose_default(&sp, None, launch::DeviceLimits::H100).expect("a launch");
        prop_assert!(l.strategy == Kernel::RowNormalization, "{:?}", l.strategy);
        let lm = ixmap::gpu::rows::rows_of(&sp)
            .expect("analysed")
            .expect("rows");
        let rows = lm.dims[0].bounds.hi + 1;
        let cols = lm.dims[1].bounds.hi + 1;
        if b * t == 1 {
            // One (b, t): its reductions depend on no output dimension, and one gathered
            // row is the output's rows together; the output's own rows are kept.
            prop_assert_eq!((rows, cols), (h, d));
        } else {
            // A row is the h * d elements of one (b, t), gathered across the heads wherever
            // the transpose put them (in place, [b, t, h, d], they are contiguous).
            prop_assert_eq!((rows, cols), (b * t, h * d));
        }
        check(&sp, &l, false).map_err(|e| TestCaseError::fail(e.to_string()))?;
        check(&sp, &l, true).map_err(|e| TestCaseError::fail(e.to_string()))?;
        check_c(&sp, false, None).map_err(|e| TestCaseError::fail(e.to_string()))?;
        Ok(())
    });
}

#[test]
fn row_reductions_of_several_warps_match() {
    let strategy = (
        1i64..12,
        prop::sample::select(vec![33i64, 500, 1000, 1023, 1500, 4096, 5000, 16384, 20000]),
        any::<bool>(),
    );
    run(10, strategy, |(rows, len, max)| {
        let (op, init) = if max { ("maxf", "-inf") } else { ("addf", "0") };
        let src = format!(
            "{ADD}rs {{\n  p = f32[{rows},{len}] parameter(0)\n  z = f32[] constant({init})\n  \
             ROOT r = f32[{rows}] reduce(p, z), dimensions={{1}}, to_apply={op}\n}}\n"
        );
        let sp = spec(&src, "rs");
        let (l, _) =
            launch::choose_default(&sp, None, launch::DeviceLimits::H100).expect("a launch");
        prop_assert!(l.strategy == Kernel::RowReduction, "{:?}", l.strategy);
        // XLA's threads along a row: 16 elements a thread in whole warps, at most 1024, where
        // they divide the block and each has a vector to read.
        let want = (((len + 15) / 16 + 31) / 32 * 32).min(1024);
        let per_row = len / l.config.vector;
        if want > 32 && l.block[0] % want == 0 && per_row >= want {
            prop_assert_eq!(l.row_threads, want);
        } else {
            prop_assert!(l.row_threads <= 32, "{}", l.row_threads);
        }
        check(&sp, &l, false).map_err(|e| TestCaseError::fail(e.to_string()))?;
        Ok(())
    });
}
