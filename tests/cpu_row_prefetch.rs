//! The CPU's row kernels, row by row, fetch the next row ahead (`IX_PREFETCH`): the inputs
//! the row's first loop reads along its columns, then the output's row, at most 8 KiB of
//! them. A load that is the same at every row (a bias along the columns) or that does not
//! run along the column (a transposed operand) is not fetched, rows of 4096 floats are not,
//! rows in blocks are not; and every kernel still matches the reference (a prefetch changes
//! no value, and its offset, at the clamped next row, compiles wherever the loads do).

use ixmap::gpu::cuda_cpu::check_c;

#[path = "common/hlo_specs.rs"]
#[allow(dead_code)]
mod hlo_specs;
use hlo_specs::{spec, OPS};

fn softmax(name: &str, rows: i64, cols: i64) -> String {
    format!(
        "{name} {{\n  p0 = f32[{rows},{cols}] parameter(0)\n  c = f32[] constant(-inf)\n  mx = f32[{rows}] reduce(p0, c), dimensions={{1}}, to_apply=maxf\n  b = f32[{rows},{cols}] broadcast(mx), dimensions={{0}}\n  sub = f32[{rows},{cols}] subtract(p0, b)\n  e = f32[{rows},{cols}] exponential(sub)\n  z = f32[] constant(0)\n  sum = f32[{rows}] reduce(e, z), dimensions={{1}}, to_apply=addf\n  bs = f32[{rows},{cols}] broadcast(sum), dimensions={{0}}\n  ROOT d = f32[{rows},{cols}] divide(e, bs)\n}}\n"
    )
}

/// The `IX_PREFETCH(&...)` lines of `name`'s CPU kernel, trimmed.
fn prefetches(src: &str, name: &str) -> Vec<String> {
    let s = spec(src, name);
    let e = ixmap::gpu::emit::cpu::emit(&s, false).expect("emits");
    e.source
        .lines()
        .filter(|l| l.contains("IX_PREFETCH(&"))
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn the_next_row_is_fetched_where_it_helps() {
    let src = format!(
        "{OPS}{}{}{}\
         biased {{\n  p0 = f32[64,512] parameter(0)\n  p1 = f32[512] parameter(1)\n  b1 = f32[64,512] broadcast(p1), dimensions={{1}}\n  x = f32[64,512] add(p0, b1)\n  z = f32[] constant(0)\n  s = f32[64] reduce(x, z), dimensions={{1}}, to_apply=addf\n  bs = f32[64,512] broadcast(s), dimensions={{0}}\n  ROOT d = f32[64,512] divide(x, bs)\n}}\n\
         transposed {{\n  p0 = f32[512,64] parameter(0)\n  t = f32[64,512] transpose(p0), dimensions={{1,0}}\n  z = f32[] constant(0)\n  s = f32[64] reduce(t, z), dimensions={{1}}, to_apply=addf\n  bs = f32[64,512] broadcast(s), dimensions={{0}}\n  ROOT d = f32[64,512] divide(t, bs)\n}}\n",
        softmax("sm1024", 4096, 1024),
        softmax("sm4096", 8, 4096),
        softmax("sm32", 64, 32),
    );
    assert_eq!(
        prefetches(&src, "sm1024"),
        [
            "IX_PREFETCH(&p0[r_next * 1024 + s0b], 0);",
            "for (int64_t c = 0; c <= 1023; c += 16) IX_PREFETCH(&out[r_next * 1024 + c], 1);",
        ]
    );
    // 16 KiB a row: over the 8 KiB fetched ahead.
    assert!(prefetches(&src, "sm4096").is_empty());
    // Short rows go in blocks: the rows follow each other in memory.
    assert!(prefetches(&src, "sm32").is_empty());
    // The bias is the same at every row; the input and the output are fetched.
    assert_eq!(
        prefetches(&src, "biased"),
        [
            "IX_PREFETCH(&p0[r_next * 512 + s0b], 0);",
            "for (int64_t c = 0; c <= 511; c += 16) IX_PREFETCH(&out[r_next * 512 + c], 1);",
        ]
    );
    // The transposed operand runs down a column of p0: only the output is fetched.
    assert_eq!(
        prefetches(&src, "transposed"),
        ["for (int64_t c = 0; c <= 511; c += 16) IX_PREFETCH(&out[r_next * 512 + c], 1);"]
    );
    if !ixmap::transcript::requirement_met("cc") {
        return;
    }
    for name in ["biased", "transposed", "sm4096"] {
        check_c(&spec(&src, name), false, None).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
