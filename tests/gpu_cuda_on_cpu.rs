//! The emitted CUDA text runs on the CPU (issue 14, part 2): every emitter and launch
//! mapping, simplified and naive, on small shapes and on shapes with several blocks (and
//! several 32×32 tiles in both tiled dimensions), checked element by element against the
//! reference through `src/gpu/cuda_on_cpu.h`.

#[path = "common/gpu_specs.rs"]
mod specs;

use ixmap::gpu::cuda_cpu::check;
use ixmap::gpu::sweep;

fn has_cxx() -> bool {
    std::process::Command::new(ixmap::gpu::cuda_cpu::compiler())
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn every_cuda_mapping_runs_on_the_cpu_verified() {
    if !has_cxx() {
        assert!(std::env::var("CI").is_err(), "CI and no C++ compiler");
        eprintln!("*** SKIPPED: no C++ compiler");
        return;
    }
    let mut checked = Vec::new();
    for spec in [
        specs::reshape_add(3, 5, 8),
        specs::reshape_add_plain(4, 6, 8),
        specs::transpose(33, 70),
        specs::broadcast_mul(9, 13),
        specs::reduce(7, 45, true),
        specs::reduce(45, 7, false),
    ] {
        for (label, launch) in sweep::launches(&spec) {
            let launch = launch.unwrap_or_else(|e| panic!("{} {label}: {e}", spec.name));
            for naive in [false, true] {
                check(&spec, &launch, naive)
                    .unwrap_or_else(|e| panic!("{} {label} naive={naive}: {e}", spec.name));
                checked.push(format!(
                    "{} {} {label}{}",
                    spec.name,
                    launch.strategy.name(),
                    if naive { " naive" } else { "" }
                ));
            }
        }
    }
    for s in [
        "loop",
        "tiled transpose",
        "row reduction",
        "column reduction",
    ] {
        assert!(
            checked.iter().any(|c| c.contains(s)),
            "no {s} kernel among {checked:?}"
        );
    }
}

/// XLA's launch strategies (issue 14, part 3), each run on the CPU and verified: the loop
/// with a capped grid (`chunk_id`) in 32- and 64-bit index arithmetic, and tiled
/// transposes of rank-3 and rank-4 permutations with several tiles in both tiled
/// dimensions and several blocks along the others.
#[test]
fn xla_launch_strategies_run_on_the_cpu_verified() {
    use ixmap::gpu::cuda_cpu::check_width;
    use ixmap::gpu::launch::{self, LaunchConfig, Strategy};
    if !has_cxx() {
        assert!(std::env::var("CI").is_err(), "CI and no C++ compiler");
        eprintln!("*** SKIPPED: no C++ compiler");
        return;
    }
    // The loop over a capped grid: 3 × 5 × 8 / 2 = 60 vectors on 2 blocks of 8 threads,
    // 4 chunks per thread (the last one partly off the end), in 32 and in 64 bits.
    let spec = specs::reshape_add(3, 5, 8);
    let cfg = LaunchConfig {
        block: 8,
        vector: 2,
        unroll: 1,
        max_blocks: 2,
    };
    let l = launch::loop_launch(&spec.output, cfg).expect("loop launch");
    assert_eq!((l.grid[0], l.chunks()), (2, 4));
    for (naive, wide) in [(false, false), (true, false), (false, true)] {
        let bits = check_width(&spec, &l, naive, wide)
            .unwrap_or_else(|e| panic!("capped loop naive={naive} wide={wide}: {e}"));
        assert_eq!(bits, if wide { 64 } else { 32 });
    }
    // Tiled transposes: (input dims, permutation), each with at least two tiles in both
    // tiled dimensions.
    for (dims, perm) in [
        (vec![3, 40, 70], vec![0, 2, 1]),
        (vec![40, 3, 70], vec![2, 1, 0]),
        (vec![70, 40, 3], vec![1, 0, 2]),
        (vec![2, 3, 35, 66], vec![0, 3, 1, 2]),
    ] {
        let spec = specs::permute(&dims, &perm);
        let l = launch::choose(&spec, LaunchConfig::default(), None).expect("launch");
        let tiled = perm.last() != Some(&(dims.len() - 1));
        assert_eq!(
            matches!(l.strategy, Strategy::TiledTranspose { .. }),
            tiled,
            "{}: {:?}",
            spec.name,
            l.strategy
        );
        for naive in [false, true] {
            check_width(&spec, &l, naive, naive)
                .unwrap_or_else(|e| panic!("{} naive={naive}: {e}", spec.name));
        }
    }
    // Reductions: rows of 16 read 4 at a time (4 lanes per row, 8 rows per warp), 2 at a
    // time (8 lanes), and rows of 45 (a warp per row); a column reduction through the
    // 32×32 tile with several blocks of columns and several tiles of rows.
    for (spec, vector, lanes) in [
        (specs::reduce(100, 16, true), 4, 4),
        (specs::reduce(40, 16, true), 2, 8),
        (specs::reduce(7, 45, true), 1, 32),
        (specs::reduce(70, 45, false), 1, 32),
    ] {
        let cfg = LaunchConfig {
            vector,
            ..Default::default()
        };
        let l = launch::choose(&spec, cfg, None).expect("reduction launch");
        assert_eq!(l.row_threads, lanes, "{} vector={vector}", spec.name);
        for naive in [false, true] {
            check_width(&spec, &l, naive, naive).unwrap_or_else(|e| {
                panic!(
                    "{} {:?} vector={vector} naive={naive}: {e}",
                    spec.name, l.strategy
                )
            });
        }
    }
}

const REDUCERS: &str = "
maxf {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
minf {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] minimum(a, b)
}
addf {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
";

/// A softmax over the minor dimension of `dims` (rank 2 or 3), as HLO.
fn softmax_hlo(name: &str, dims: &[i64]) -> String {
    let shape = dims.iter().map(|d| d.to_string()).collect::<Vec<_>>();
    let rows = &shape[..shape.len() - 1];
    let keep = (0..rows.len()).map(|d| d.to_string()).collect::<Vec<_>>();
    let (full, row, keep, last) = (
        shape.join(","),
        rows.join(","),
        keep.join(","),
        dims.len() - 1,
    );
    format!(
        "{name} {{
  p0 = f32[{full}] parameter(0)
  c = f32[] constant(-inf)
  mx = f32[{row}] reduce(p0, c), dimensions={{{last}}}, to_apply=maxf
  b = f32[{full}] broadcast(mx), dimensions={{{keep}}}
  sub = f32[{full}] subtract(p0, b)
  e = f32[{full}] exponential(sub)
  z = f32[] constant(0)
  sum = f32[{row}] reduce(e, z), dimensions={{{last}}}, to_apply=addf
  bs = f32[{full}] broadcast(sum), dimensions={{{keep}}}
  ROOT d = f32[{full}] divide(e, bs)
}}
"
    )
}

/// Layer-norm-like: the row mean, then the variance of the row around it (a reduction
/// whose body reads the first), then `(x - mean) / sqrt(var + eps)`.
const LAYER_NORM: &str = "
ln {
  p0 = f32[37,70] parameter(0)
  z = f32[] constant(0)
  s = f32[37] reduce(p0, z), dimensions={1}, to_apply=addf
  n = f32[] constant(70)
  nb = f32[37] broadcast(n), dimensions={}
  mean = f32[37] divide(s, nb)
  mb = f32[37,70] broadcast(mean), dimensions={0}
  c = f32[37,70] subtract(p0, mb)
  sq = f32[37,70] multiply(c, c)
  v = f32[37] reduce(sq, z), dimensions={1}, to_apply=addf
  var = f32[37] divide(v, nb)
  eps = f32[] constant(0.001)
  eb = f32[37] broadcast(eps), dimensions={}
  ve = f32[37] add(var, eb)
  sd = f32[37] sqrt(ve)
  sdb = f32[37,70] broadcast(sd), dimensions={0}
  ROOT o = f32[37,70] divide(c, sdb)
}
";

/// A row reduction at the root whose operand reads a reduction of its own row: the sum
/// of `exp(x - max)` (log-sum-exp without the log), rows of 50.
const SUM_EXP: &str = "
sumexp {
  p0 = f32[40,50] parameter(0)
  c = f32[] constant(-inf)
  mx = f32[40] reduce(p0, c), dimensions={1}, to_apply=maxf
  b = f32[40,50] broadcast(mx), dimensions={0}
  sub = f32[40,50] subtract(p0, b)
  e = f32[40,50] exponential(sub)
  z = f32[] constant(0)
  ROOT sum = f32[40] reduce(e, z), dimensions={1}, to_apply=addf
}
";

/// A row reduction under an elementwise epilogue (`abs` of the sum of `exp(x - m)`, as
/// JAX's logsumexp writes it), one output element per row: each output element is a row of
/// its own, folded by a warp.
const ABS_SUM_EXP: &str = "
abssum {
  p0 = f32[40,50] parameter(0)
  p1 = f32[40] parameter(1)
  b = f32[40,50] broadcast(p1), dimensions={0}
  sub = f32[40,50] subtract(p0, b)
  e = f32[40,50] exponential(sub)
  z = f32[] constant(0)
  sum = f32[40] reduce(e, z), dimensions={1}, to_apply=addf
  ROOT a = f32[40] abs(sum)
}
";

/// A reduction of the minor dimension of a rank-3 operand times another input: its value
/// moves along the output's minor dimension, so the output's rows do not suit; each
/// output element is its own row.
const SUM_TIMES: &str = "
sumtimes {
  p0 = f32[6,7,50] parameter(0)
  z = f32[] constant(0)
  s = f32[6,7] reduce(p0, z), dimensions={2}, to_apply=addf
  p1 = f32[6,7] parameter(1)
  ROOT m = f32[6,7] multiply(s, p1)
}
";

/// An RMS norm in bf16 as JAX's `rmsnorm_bf16` fuses it: rows of 512 bf16, the mean
/// square in f32, the row scaled and multiplied by a bf16 gain.
const RMS_BF16: &str = "
rms {
  g = bf16[512] parameter(0)
  x = bf16[10,512] parameter(1)
  xf = f32[10,512] convert(x)
  sq = f32[10,512] multiply(xf, xf)
  z = f32[] constant(0)
  s = f32[10] reduce(sq, z), dimensions={1}, to_apply=addf
  n = f32[] constant(0.001953125)
  nb = f32[10] broadcast(n), dimensions={}
  m = f32[10] multiply(s, nb)
  eps = f32[] constant(1e-06)
  eb = f32[10] broadcast(eps), dimensions={}
  me = f32[10] add(m, eb)
  rs = f32[10] rsqrt(me)
  rb = f32[10,512] broadcast(rs), dimensions={0}
  y = f32[10,512] multiply(xf, rb)
  yb = bf16[10,512] convert(y)
  gb = bf16[10,512] broadcast(g), dimensions={1}
  ROOT o = bf16[10,512] multiply(yb, gb)
}
";

fn hlo_spec(src: &str, name: &str) -> ixmap::gpu::spec::KernelSpec {
    use ixmap::hlo::workspace::Target;
    let mut s = ixmap::Session::new();
    for o in s.execute(&format!("{REDUCERS}{src}")) {
        assert!(o.result.is_ok(), "{:?}", o.result);
    }
    let Some(Target::Computation(c)) = s.hlo.resolve(name) else {
        panic!("{name} is defined")
    };
    ixmap::gpu::from_hlo::from_computation(&s.hlo.module, c).expect("adapts")
}

/// Reductions read inside a body (issue 14): softmax and a layer norm run as row
/// normalizations (a warp per row, or 8 lanes per row of 8 and 4 rows per warp), with
/// several blocks and a partly filled last one; a root row reduction reading its row's max
/// computes the max first with the same warp. Each verified element by element on the CPU,
/// simplified and naive, in 32 and 64 bits; the plain loop (`tiled=false`) still verifies.
#[test]
fn reductions_inside_a_body_run_once_per_row_verified() {
    use ixmap::gpu::cuda_cpu::check_width;
    use ixmap::gpu::launch::{self, LaunchConfig, Strategy};
    if !has_cxx() {
        assert!(std::env::var("CI").is_err(), "CI and no C++ compiler");
        eprintln!("*** SKIPPED: no C++ compiler");
        return;
    }
    let cases = [
        (hlo_spec(&softmax_hlo("sm", &[2, 65, 125]), "sm"), 32, 33),
        (hlo_spec(&softmax_hlo("sm", &[5, 40]), "sm"), 32, 2),
        (hlo_spec(&softmax_hlo("sm", &[70, 8]), "sm"), 8, 5),
        (hlo_spec(LAYER_NORM, "ln"), 32, 10),
        // Rows shorter than a warp that do not divide it: lanes 20 to 31 (2 to 31) past the
        // row's end must neither fold nor write (they read and wrote the next row once).
        (hlo_spec(&softmax_hlo("sm", &[64, 20]), "sm"), 32, 16),
        (hlo_spec(&softmax_hlo("sm", &[9, 3]), "sm"), 32, 3),
        // Each output element its own row: a reduction under an epilogue.
        (hlo_spec(ABS_SUM_EXP, "abssum"), 32, 10),
        (hlo_spec(SUM_TIMES, "sumtimes"), 32, 11),
        // bf16 rows, 8 elements a lane in one 16-byte access by default (XLA's rmsnorm).
        (hlo_spec(RMS_BF16, "rms"), 32, 3),
    ];
    for (spec, lanes, grid) in &cases {
        let l = launch::choose(spec, LaunchConfig::default(), None).expect("launch");
        assert_eq!(l.strategy, Strategy::RowNormalization, "{}", spec.name);
        assert_eq!((l.row_threads, l.grid[0]), (*lanes, *grid), "{}", spec.name);
        for (naive, wide) in [(false, false), (true, false), (false, true)] {
            check_width(spec, &l, naive, wide).unwrap_or_else(|e| {
                panic!(
                    "{} {:?} naive={naive} wide={wide}: {e}",
                    spec.name, spec.output.dims
                )
            });
        }
        // Several consecutive elements a lane (16-byte loads and stores where they line
        // up), wherever the width divides the row.
        for vector in [2, 4, 8] {
            let cfg = LaunchConfig {
                vector,
                ..LaunchConfig::default()
            };
            let Ok(l) = launch::choose(spec, cfg, None) else {
                continue;
            };
            assert_eq!(l.strategy, Strategy::RowNormalization, "{}", spec.name);
            assert_eq!(l.config.vector, vector, "{}", spec.name);
            for (naive, wide) in [(false, false), (true, false), (false, true)] {
                check_width(spec, &l, naive, wide).unwrap_or_else(|e| {
                    panic!(
                        "{} {:?} vector={vector} naive={naive} wide={wide}: {e}",
                        spec.name, spec.output.dims
                    )
                });
            }
        }
        // The element-by-element loop is still what `tiled=false` launches.
        let plain = launch::choose(spec, LaunchConfig::default(), Some(false)).expect("loop");
        assert_eq!(plain.strategy, Strategy::Loop);
        check_width(spec, &plain, false, false)
            .unwrap_or_else(|e| panic!("{} as a loop: {e}", spec.name));
    }
    // XLA's default for the bf16 rows: 8 elements a lane, read and written 16 bytes at a
    // time, and verified.
    let rms = hlo_spec(RMS_BF16, "rms");
    let (l, _) = launch::choose_default(&rms, None, launch::DeviceLimits::H100).expect("default");
    assert_eq!(
        (l.strategy.clone(), l.config.vector),
        (Strategy::RowNormalization, 8)
    );
    let src = ixmap::gpu::emit::cuda::emit(&rms, &l, false)
        .expect("emits")
        .source;
    assert!(
        src.contains("const uint4 ") && src.contains("*reinterpret_cast<uint4 *>(out + "),
        "{src}"
    );
    check_width(&rms, &l, false, false).unwrap_or_else(|e| panic!("rms default: {e}"));
    let spec = hlo_spec(SUM_EXP, "sumexp");
    let l = launch::choose(&spec, LaunchConfig::default(), None).expect("launch");
    assert_eq!(l.strategy, Strategy::RowReduction);
    let src = ixmap::gpu::emit::cuda::emit(&spec, &l, false)
        .expect("emits")
        .source;
    assert!(src.contains("__shfl_xor_sync"), "{src}");
    for naive in [false, true] {
        check_width(&spec, &l, naive, naive)
            .unwrap_or_else(|e| panic!("sumexp naive={naive}: {e}"));
    }
}

/// The loops of a kernel body, by nesting depth: `(depth, header)` for each `for`, with the
/// lane-exchange loops (`off`) left out; and the kernel's `__device__` functions.
fn loops_of(src: &str) -> (Vec<(usize, String)>, usize) {
    let mut out = Vec::new();
    let mut stack: Vec<bool> = Vec::new();
    for l in src.lines() {
        let t = l.trim();
        if t.starts_with("//") {
            continue;
        }
        let is_for = t.starts_with("for (");
        if is_for && !t.contains("int off =") {
            out.push((stack.iter().filter(|&&f| f).count(), t.to_string()));
        }
        for ch in t.chars() {
            match ch {
                '{' => stack.push(is_for && !t.contains("int off =")),
                '}' => {
                    stack.pop();
                }
                _ => {}
            }
        }
    }
    (out, src.matches("__device__").count())
}

/// The work a row normalization does is O(row) per row: every function inlined, no loop
/// inside another (each reduction one strided pass per lane, the elements one more), and
/// the input read once per reduction and once more for the elements. The plain loop is
/// shown to be the O(row²) form this replaces: a loop over the row calling a function
/// that loops over the row again.
#[test]
fn a_row_normalization_reads_each_row_a_bounded_number_of_times() {
    use ixmap::gpu::launch::{self, LaunchConfig};
    // (fusion, reductions it reads, load sites of p0): the layer norm's `c * c` writes its
    // load twice (the same offset; the compiler merges them).
    for (spec, reductions, load_sites) in [
        (hlo_spec(&softmax_hlo("sm", &[2, 65, 125]), "sm"), 2, 3),
        (hlo_spec(LAYER_NORM, "ln"), 2, 4),
    ] {
        let l = launch::choose(&spec, LaunchConfig::default(), None).expect("launch");
        for naive in [false, true] {
            let src = ixmap::gpu::emit::cuda::emit(&spec, &l, naive)
                .expect("emits")
                .source;
            let (loops, device_fns) = loops_of(&src);
            assert_eq!(device_fns, 0, "{src}");
            assert!(loops.iter().all(|(d, _)| *d == 0), "{loops:?}\n{src}");
            // One pass per reduction, one over the row's elements, each ceil(row / 32)
            // steps.
            assert_eq!(loops.len(), reductions + 1, "{loops:?}");
            let steps = (spec.output.dims.last().unwrap() + 31) / 32 - 1;
            assert!(
                loops
                    .iter()
                    .all(|(_, h)| h.contains(&format!("<= {steps};"))),
                "{loops:?}"
            );
            // The input is read in each pass: max and sum (or mean and variance), then
            // the element; no read anywhere else.
            let reads = src.lines().filter(|l| l.contains("p0[")).count();
            assert_eq!(reads, load_sites, "reads of p0:\n{src}");
        }
        let plain = launch::choose(&spec, LaunchConfig::default(), Some(false)).expect("loop");
        let src = ixmap::gpu::emit::cuda::emit(&spec, &plain, false)
            .expect("emits")
            .source;
        let (_, device_fns) = loops_of(&src);
        assert!(
            device_fns > 0,
            "the loop calls a function per element:\n{src}"
        );
    }
}

/// XLA's float max and min propagate NaN: a NaN anywhere in a row makes the row's max (and
/// so its softmax) NaN, whether it comes first, in the middle or last; the reference, the
/// host C kernel and the CUDA kernels (row normalization, plain loop, row reduction) agree
/// element by element, and the reference does say NaN.
#[test]
fn float_max_and_min_propagate_nan() {
    use ixmap::gpu::cuda_cpu::{check_c, check_inputs};
    use ixmap::gpu::launch::{self, LaunchConfig};
    use ixmap::gpu::reference::{binary, Reference, Scalar};
    use ixmap::gpu::spec::{BinOp, ElemType};
    let nan = Scalar::F(f64::NAN);
    for op in [BinOp::Max, BinOp::Min] {
        for (x, y) in [(nan, Scalar::F(1.0)), (Scalar::F(1.0), nan)] {
            let r = binary(op, ElemType::F32, x, y).expect("binary");
            assert!(
                r.to_f64(ElemType::F32).is_nan(),
                "{op:?}({x:?}, {y:?}) = {r:?}"
            );
        }
    }
    let minrow = "
mn {
  p0 = f32[4,40] parameter(0)
  c = f32[] constant(inf)
  ROOT m = f32[4] reduce(p0, c), dimensions={1}, to_apply=minf
}
";
    let sm = hlo_spec(&softmax_hlo("sm", &[4, 40]), "sm");
    let mn = hlo_spec(minrow, "mn");
    // Row 0: NaN first; row 1: in the middle; row 2: last; row 3: none.
    let mut vals: Vec<f32> = (0..160)
        .map(|i| ((i * 37) % 23) as f32 / 4.0 - 2.0)
        .collect();
    for (row, col) in [(0, 0), (1, 17), (2, 39)] {
        vals[row * 40 + col] = f32::NAN;
    }
    let inputs = vec![vals
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect::<Vec<u8>>()];
    for spec in [&sm, &mn] {
        let want = Reference::new(spec, &inputs)
            .expect("reference")
            .outputs()
            .expect("outputs")
            .remove(0);
        let per_row = want.len() / 4;
        for (i, w) in want.iter().enumerate() {
            let row = i / per_row;
            assert_eq!(
                w.to_f64(ElemType::F32).is_nan(),
                row < 3,
                "{} element {i}: {w:?}",
                spec.name
            );
        }
        if !has_cxx() {
            continue;
        }
        check_c(spec, false, Some(&inputs)).unwrap_or_else(|e| panic!("{} C: {e}", spec.name));
        for tiled in [None, Some(false)] {
            let l = launch::choose(spec, LaunchConfig::default(), tiled).expect("launch");
            for naive in [false, true] {
                check_inputs(spec, &l, naive, false, Some(&inputs)).unwrap_or_else(|e| {
                    panic!("{} {:?} naive={naive}: {e}", spec.name, l.strategy)
                });
            }
        }
    }
}
