//! The CPU's row kernels with explicit lanes (rows a multiple of 16 floats or 8 doubles,
//! short rows in blocks) still propagate NaN through a float max or min, as XLA's do: a NaN
//! first, in the middle or last in its row makes the row's max NaN, and a softmax row NaN.

use ixmap::gpu::cuda_cpu::check_c;
use ixmap::gpu::reference::Reference;
use ixmap::gpu::spec::ElemType;

#[path = "common/hlo_specs.rs"]
#[allow(dead_code)]
mod hlo_specs;
use hlo_specs::spec;

fn reducers(t: &str) -> String {
    format!(
        "maxf {{\n  a = {t}[] parameter(0)\n  b = {t}[] parameter(1)\n  ROOT m = {t}[] maximum(a, b)\n}}\n\
         minf {{\n  a = {t}[] parameter(0)\n  b = {t}[] parameter(1)\n  ROOT m = {t}[] minimum(a, b)\n}}\n\
         addf {{\n  a = {t}[] parameter(0)\n  b = {t}[] parameter(1)\n  ROOT s = {t}[] add(a, b)\n}}\n"
    )
}

/// 4 rows of `cols`: NaN first in row 0, in the middle of row 1, last in row 2; row 3 none.
fn inputs(t: ElemType, cols: usize) -> Vec<Vec<u8>> {
    let mut vals: Vec<f64> = (0..4 * cols)
        .map(|i| ((i * 37) % 23) as f64 / 4.0 - 2.0)
        .collect();
    for (row, col) in [(0, 0), (1, cols / 2 + 1), (2, cols - 1)] {
        vals[row * cols + col] = f64::NAN;
    }
    vec![match t {
        ElemType::F64 => vals.iter().flat_map(|v| v.to_le_bytes()).collect(),
        _ => vals
            .iter()
            .flat_map(|&v| (v as f32).to_le_bytes())
            .collect(),
    }]
}

#[test]
fn lanes_of_a_float_max_or_min_propagate_nan() {
    if !ixmap::transcript::requirement_met("cc") {
        return;
    }
    for (t, cols) in [("f32", 32), ("f32", 64), ("f64", 16), ("f64", 24)] {
        let elem = if t == "f64" {
            ElemType::F64
        } else {
            ElemType::F32
        };
        let src = format!(
            "{}sm {{\n  p0 = {t}[4,{cols}] parameter(0)\n  c = {t}[] constant(-inf)\n  mx = {t}[4] reduce(p0, c), dimensions={{1}}, to_apply=maxf\n  b = {t}[4,{cols}] broadcast(mx), dimensions={{0}}\n  sub = {t}[4,{cols}] subtract(p0, b)\n  e = {t}[4,{cols}] exponential(sub)\n  z = {t}[] constant(0)\n  sum = {t}[4] reduce(e, z), dimensions={{1}}, to_apply=addf\n  bs = {t}[4,{cols}] broadcast(sum), dimensions={{0}}\n  ROOT d = {t}[4,{cols}] divide(e, bs)\n}}\n\
             mn {{\n  p0 = {t}[4,{cols}] parameter(0)\n  c = {t}[] constant(inf)\n  m = {t}[4] reduce(p0, c), dimensions={{1}}, to_apply=minf\n  b = {t}[4,{cols}] broadcast(m), dimensions={{0}}\n  ROOT o = {t}[4,{cols}] add(p0, b)\n}}\n",
            reducers(t)
        );
        let inputs = inputs(elem, cols);
        for name in ["sm", "mn"] {
            let s = spec(&src, name);
            let e = ixmap::gpu::emit::cpu::emit(&s, false).expect("emits");
            assert!(
                e.source.contains("_n[lane]"),
                "{name} {t}[4,{cols}]: NaN flags in lanes:\n{}",
                e.source
            );
            let want = Reference::new(&s, &inputs)
                .expect("reference")
                .output()
                .expect("output");
            for (i, w) in want.iter().enumerate() {
                // Every element of rows 0 to 2 is NaN (the row's max or min is).
                assert_eq!(
                    w.to_f64(elem).is_nan(),
                    i / cols < 3,
                    "{name} {t} element {i}"
                );
            }
            check_c(&s, false, Some(&inputs))
                .unwrap_or_else(|e| panic!("{name} {t}[4,{cols}]: {e}"));
        }
    }
}
