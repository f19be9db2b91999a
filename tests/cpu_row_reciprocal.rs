//! The CPU's row kernels divide a row's elements by a float reduction of the row through its
//! reciprocal only where `1 <= |sum| <= 2^126` (2^1022 for f64), and by the division
//! otherwise (`emit::cpu`'s `reciprocal`). Rows whose sums are at and past both edges — a
//! sum of 1 exactly, 0.5, subnormal, above 2^126, overflowing to inf, 0 (x / 0 is ±inf),
//! NaN, negative — still match the reference element by element (inf and NaN exactly), row by
//! row (rows of 1024, f32) and in blocks of short rows (32, f32; 24, f64).

use ixmap::gpu::cuda_cpu::check_c;
use ixmap::gpu::spec::ElemType;

#[path = "common/hlo_specs.rs"]
#[allow(dead_code)]
mod hlo_specs;
use hlo_specs::spec;

/// Row `k`'s value at column `c` (`cols` columns): each row a sum at or past an edge.
fn value(k: usize, c: usize, cols: usize, t: ElemType) -> f64 {
    let n = cols as f64;
    let huge = if t == ElemType::F64 { 1e306 } else { 1e37 };
    let over = if t == ElemType::F64 { 1.7e308 } else { 3e38 };
    let tiny = if t == ElemType::F64 { 1e-310 } else { 1e-42 };
    match k {
        0 => 1.0,                                         // sum = cols
        1 => 1.0 / n,                                     // sum = 1: the reciprocal, exactly 1
        2 => 0.5 / n,                                     // sum = 0.5: the division
        3 => tiny,               // a subnormal sum, whose reciprocal overflows to inf
        4 => huge,               // sum past 2^126 (2^1022)
        5 => over,               // sum overflows to inf: x / inf = 0
        6 => [1.0, -1.0][c % 2], // sum = 0: x / 0 = +-inf
        7 => [f64::NAN, 2.0][usize::from(c != cols / 2)], // a NaN: the row is NaN
        8 => -3.0 - (c % 5) as f64, // a negative sum
        _ => ((k * 31 + c * 17) % 23) as f64 / 8.0 - 1.0, // a mixed row
    }
}

fn inputs(t: ElemType, rows: usize, cols: usize) -> Vec<Vec<u8>> {
    let vals = (0..rows * cols).map(|i| value(i / cols, i % cols, cols, t));
    vec![match t {
        ElemType::F64 => vals.flat_map(|v| v.to_le_bytes()).collect(),
        _ => vals.flat_map(|v| (v as f32).to_le_bytes()).collect(),
    }]
}

#[test]
fn a_row_divides_by_its_sum_through_the_reciprocal_only_where_that_is_safe() {
    for (t, rows, cols) in [("f32", 16, 1024), ("f32", 16, 32), ("f64", 12, 24)] {
        let elem = if t == "f64" {
            ElemType::F64
        } else {
            ElemType::F32
        };
        let src = format!(
            "addf {{\n  a = {t}[] parameter(0)\n  b = {t}[] parameter(1)\n  ROOT s = {t}[] add(a, b)\n}}\n\
             norm {{\n  p0 = {t}[{rows},{cols}] parameter(0)\n  z = {t}[] constant(0)\n  s = {t}[{rows}] reduce(p0, z), dimensions={{1}}, to_apply=addf\n  bs = {t}[{rows},{cols}] broadcast(s), dimensions={{0}}\n  ROOT d = {t}[{rows},{cols}] divide(p0, bs)\n}}\n"
        );
        let s = spec(&src, "norm");
        let e = ixmap::gpu::emit::cpu::emit(&s, false).expect("emits");
        assert!(
            e.source.contains("_recip ?") && e.source.contains("_inv = "),
            "{t}[{rows},{cols}]: the reciprocal:\n{}",
            e.source
        );
        if !ixmap::transcript::requirement_met("cc") {
            continue;
        }
        check_c(&s, false, Some(&inputs(elem, rows, cols)))
            .unwrap_or_else(|e| panic!("{t}[{rows},{cols}]: {e}"));
    }
}
