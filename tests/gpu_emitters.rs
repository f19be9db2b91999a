//! XLA's emitters that write the output in more than one way (issue 14, part 3):
//! concatenate (a loop per operand over its slice), in-place dynamic-update-slice (a loop
//! over the update, stored at clamped runtime offsets) and multi-output fusions (tuple
//! roots). Each is built from HLO, its thread-id maps checked to write every output element
//! exactly once, and its CUDA source run on the CPU (one block and several, simplified and
//! naive) and its C source compiled and run, every element of every output checked against
//! the reference interpreter.

use ixmap::gpu::cuda_cpu::{check_c, check_inputs};
use ixmap::gpu::launch::{self, LaunchConfig, Strategy};
use ixmap::gpu::reference::make_inputs;
use ixmap::gpu::spec::{KernelSpec, Root};
use ixmap::gpu::sweep;
use ixmap::map::DomainPoints;
use ixmap::Session;

fn has_cxx() -> bool {
    std::process::Command::new(ixmap::gpu::cuda_cpu::compiler())
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

const HLO: &str = "
add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
max_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT m = f32[] maximum(x, y)
}
sc_rows {
  operand = f32[10,8] parameter(0)
  indices = s32[5,1] parameter(1)
  updates = f32[5,3] parameter(2)
  ROOT s = f32[10,8] scatter(operand, indices, updates), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_f32
}
sc_patches {
  p = f32[6,7] parameter(0)
  ix = s32[4,2] parameter(1)
  up = f32[2,3,4] parameter(2)
  e = f32[2,3,4] exponential(up)
  ROOT s = f32[6,7] scatter(p, ix, e), update_window_dims={0,1}, inserted_window_dims={}, scatter_dims_to_operand_dims={1,0}, index_vector_dim=1, to_apply=max_f32
}
sc_big {
  operand = f32[1000,64] parameter(0)
  indices = s32[300] parameter(1)
  updates = f32[300,64] parameter(2)
  ROOT s = f32[1000,64] scatter(operand, indices, updates), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_f32
}
cat_small {
  a = f32[3,5] parameter(0)
  b = f32[3,7] parameter(1)
  c = f32[3,2] parameter(2)
  e = f32[3,7] exponential(b)
  ROOT cat = f32[3,14] concatenate(a, e, c), dimensions={1}
}
cat_rows {
  a = f32[200,64] parameter(0)
  b = f32[100,64] parameter(1)
  n = f32[100,64] negate(b)
  ROOT cat = f32[400,64] concatenate(a, n, b), dimensions={0}
}
cat_shared {
  a = f32[40,33] parameter(0)
  t = f32[40,33] tanh(a)
  s = f32[40,33] add(t, a)
  ROOT cat = f32[40,66] concatenate(t, s), dimensions={1}
}
dus_small {
  op = f32[20,30] parameter(0)
  u = f32[4,8] parameter(1)
  s0 = s32[] parameter(2)
  s1 = s32[] parameter(3)
  two = f32[] constant(2)
  tb = f32[4,8] broadcast(two), dimensions={}
  um = f32[4,8] multiply(u, tb)
  ROOT d = f32[20,30] dynamic-update-slice(op, um, s0, s1)
}
dus_big {
  op = f32[300,200] parameter(0)
  u = f32[100,150] parameter(1)
  s0 = s32[] parameter(2)
  s1 = s32[] parameter(3)
  ROOT d = f32[300,200] dynamic-update-slice(op, u, s0, s1)
}
multi {
  p0 = f32[40,70] parameter(0)
  p1 = f32[40,70] parameter(1)
  s = f32[40,70] add(p0, p1)
  m = f32[40,70] multiply(s, p1)
  e = f32[40,70] exponential(s)
  ROOT t = (f32[40,70], f32[40,70], f32[40,70]) tuple(s, m, e)
}
multi_transpose {
  p0 = f32[64,96] parameter(0)
  t = f32[96,64] transpose(p0), dimensions={1,0}
  n = f32[96,64] negate(t)
  ROOT r = (f32[96,64], f32[96,64]) tuple(n, t)
}
mo_bitcast {
  p0 = f32[40,70] parameter(0)
  e = f32[40,70] exponential(p0)
  r = f32[70,40] reshape(e)
  b = f32[2800] reshape(p0)
  n = f32[2800] negate(b)
  c = s32[40,70] convert(p0)
  ROOT t = (f32[40,70], f32[70,40], f32[2800], s32[40,70]) tuple(e, r, n, c)
}
mo_tside {
  p0 = f32[64,96] parameter(0)
  p1 = f32[96,64] parameter(1)
  t = f32[96,64] transpose(p0), dimensions={1,0}
  a = f32[96,64] add(t, p1)
  e = f32[64,96] exponential(p0)
  ROOT r = (f32[96,64], f32[64,96], f32[96,64]) tuple(a, e, p1)
}
mo_tside3 {
  p0 = f32[3,40,70] parameter(0)
  t = f32[70,3,40] transpose(p0), dimensions={2,0,1}
  n = f32[70,3,40] negate(t)
  s = f32[3,40,70] sqrt(p0)
  ROOT r = (f32[70,3,40], f32[3,40,70]) tuple(n, s)
}
mo_rows {
  p0 = f32[9,100] parameter(0)
  z = f32[] constant(0)
  e = f32[9,100] exponential(p0)
  s = f32[9] reduce(e, z), dimensions={1}, to_apply=add_f32
  m = f32[9] reduce(e, z), dimensions={1}, to_apply=max_f32
  ROOT t = (f32[9], f32[9,100], f32[9]) tuple(s, e, m)
}
mo_rows16 {
  p0 = f32[64,16] parameter(0)
  z = f32[] constant(0)
  s = f32[64] reduce(p0, z), dimensions={1}, to_apply=add_f32
  m = f32[64] reduce(p0, z), dimensions={1}, to_apply=max_f32
  n = f32[64,16] negate(p0)
  ROOT t = (f32[64], f32[64], f32[64,16]) tuple(s, m, n)
}
mo_cols {
  p0 = f32[300,200] parameter(0)
  p1 = f32[300,200] parameter(1)
  z = f32[] constant(0)
  a = f32[300,200] add(p0, p1)
  s = f32[200] reduce(a, z), dimensions={0}, to_apply=add_f32
  m = f32[200] reduce(p1, z), dimensions={0}, to_apply=max_f32
  ROOT t = (f32[200], f32[300,200], f32[200]) tuple(s, a, m)
}
mo_rows16x {
  p0 = f32[64,16] parameter(0)
  p1 = f32[64,16] parameter(1)
  p2 = f32[64,16] parameter(2)
  z = f32[] constant(0)
  s = f32[64] reduce(p0, z), dimensions={1}, to_apply=add_f32
  m = f32[64] reduce(p1, z), dimensions={1}, to_apply=max_f32
  n = f32[64,16] negate(p2)
  ROOT t = (f32[64], f32[64], f32[64,16]) tuple(s, m, n)
}
mo_colsx {
  p0 = f32[300,200] parameter(0)
  p1 = f32[300,200] parameter(1)
  p2 = f32[300,200] parameter(2)
  z = f32[] constant(0)
  a = f32[300,200] add(p0, p1)
  s = f32[200] reduce(a, z), dimensions={0}, to_apply=add_f32
  m = f32[200] reduce(p2, z), dimensions={0}, to_apply=max_f32
  ROOT t = (f32[200], f32[300,200], f32[200]) tuple(s, a, m)
}
";

fn spec(name: &str) -> KernelSpec {
    let mut s = Session::new();
    for o in s.execute(HLO) {
        assert!(o.result.is_ok(), "{:?}", o.result);
    }
    sweep::spec_for(&s.hlo, name)
        .unwrap_or_else(|| panic!("{name} is defined"))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The physical offsets each thread-id map of a multi-loop launch writes, counted: every
/// element of output 0 exactly once (a concatenate), or every element of the update region
/// once at the given start indices (a dynamic-update-slice).
fn writes(spec: &KernelSpec, l: &launch::Launch, rt: &[i64]) -> Vec<u32> {
    let n = spec.output.num_elements().unwrap() as usize;
    let strides = spec.output.strides().unwrap();
    let mut seen = vec![0u32; n];
    for p in &l.parts {
        // Runtime variables fixed at the given values.
        let mut m = p.write.clone();
        let nv = (m.dims.len() + m.ranges.len()) as u32;
        let values: Vec<i64> = rt.to_vec();
        m.results = m
            .results
            .iter()
            .map(|r| {
                r.substitute(&mut |v| {
                    if v >= nv {
                        ixmap::expr::Expr::constant(values[(v - nv) as usize])
                    } else {
                        ixmap::expr::Expr::var(v)
                    }
                })
            })
            .collect();
        m.runtimes.clear();
        DomainPoints::for_each(&m, &Default::default(), &mut |_, r| {
            let off: i64 = r.iter().zip(&strides).map(|(a, b)| a * b).sum();
            seen[off as usize] += 1;
            Ok(true)
        })
        .expect("enumerate");
    }
    seen
}

fn configs() -> Vec<LaunchConfig> {
    vec![
        LaunchConfig::default(),
        LaunchConfig {
            block: 32,
            vector: 1,
            unroll: 2,
            max_blocks: 3,
        },
        LaunchConfig {
            block: 32,
            vector: 2,
            unroll: 2,
            max_blocks: 3,
        },
    ]
}

#[test]
fn concatenate_writes_each_output_element_once_from_its_operand() {
    for name in ["cat_small", "cat_rows", "cat_shared"] {
        let s = spec(name);
        for cfg in configs() {
            let l = match launch::choose(&s, cfg, None) {
                // vector=2 needs an even minor dimension of the largest operand.
                Err(e) if cfg.vector > 1 && e.to_string().contains("vector=") => continue,
                r => r.expect("launch"),
            };
            assert_eq!(l.strategy, Strategy::Concatenate);
            assert_eq!(l.parts.len(), if name == "cat_shared" { 2 } else { 3 });
            let seen = writes(&s, &l, &[]);
            assert!(seen.iter().all(|&k| k == 1), "{name} {cfg:?}: {seen:?}");
        }
    }
    // The launch is sized by the largest operand (a[200, 64]: 100 blocks of 128).
    let l = launch::choose(&spec("cat_rows"), LaunchConfig::default(), None).unwrap();
    assert_eq!((l.block[0], l.grid[0]), (128, 100));
}

#[test]
fn dynamic_update_slice_writes_the_update_region_once() {
    let s = spec("dus_small");
    for cfg in configs() {
        let l = launch::choose(&s, cfg, None).expect("launch");
        assert_eq!(l.strategy, Strategy::DynamicUpdateSlice);
        // rt0 in [0, 16], rt1 in [0, 22]: the clamped start indices.
        let rt: Vec<(i64, i64)> = l
            .write_map
            .runtimes
            .iter()
            .map(|v| (v.bounds.lo, v.bounds.hi))
            .collect();
        assert_eq!(rt, vec![(0, 16), (0, 22)]);
        for starts in [[0, 0], [3, 5], [16, 22]] {
            let seen = writes(&s, &l, &starts);
            let strides = [30i64, 1];
            for (off, &k) in seen.iter().enumerate() {
                let (i, j) = (off as i64 / strides[0], off as i64 % strides[0]);
                let inside = (starts[0]..starts[0] + 4).contains(&i)
                    && (starts[1]..starts[1] + 8).contains(&j);
                assert_eq!(k, inside as u32, "{cfg:?} {starts:?} at ({i}, {j})");
            }
        }
    }
}

/// Inputs of a dynamic-update-slice with the start indices set to `starts` (its last
/// inputs), or of a scatter with its indices (input 1) set to `starts`.
fn with_starts(s: &KernelSpec, starts: &[i32]) -> Vec<Vec<u8>> {
    let mut inputs = make_inputs(s).unwrap();
    if matches!(s.root, Root::Scatter { .. }) {
        assert_eq!(inputs[1].len(), starts.len() * 4, "{}: indices", s.name);
        inputs[1] = starts.iter().flat_map(|v| v.to_le_bytes()).collect();
        return inputs;
    }
    let n = inputs.len();
    for (k, v) in starts.iter().enumerate() {
        inputs[n - starts.len() + k] = v.to_le_bytes().to_vec();
    }
    inputs
}

#[test]
fn every_emitter_runs_on_the_cpu_verified() {
    if !has_cxx() {
        assert!(std::env::var("CI").is_err(), "CI and no C++ compiler");
        eprintln!("*** SKIPPED: no C++ compiler");
        return;
    }
    let mut checked = 0;
    // (name, start indices: in range, clamped from below and above, the far corner).
    let cases: Vec<(&str, Vec<Vec<i32>>)> = vec![
        ("cat_small", vec![vec![]]),
        ("cat_rows", vec![vec![]]),
        ("cat_shared", vec![vec![]]),
        ("dus_small", vec![vec![3, 5], vec![-2, 100], vec![16, 22]]),
        ("dus_big", vec![vec![150, 7], vec![1000, -1000]]),
        ("multi", vec![vec![]]),
        // Scatters: the indices make_inputs gives (small values, some negative: skipped),
        // and chosen ones: repeated rows (combined atomically), the last row that fits,
        // rows past either end (skipped).
        ("sc_rows", vec![vec![], vec![3, 3, 9, -1, 10]]),
        // Index vectors (column, row): 2x3 windows fit for row <= 4 and column <= 4.
        ("sc_patches", vec![vec![], vec![1, 2, 1, 2, 4, 4, 5, 0]]),
        (
            "sc_big",
            vec![(0..300).map(|i| (i * 37 % 1100) as i32 - 50).collect()],
        ),
        ("multi_transpose", vec![vec![]]),
        ("mo_bitcast", vec![vec![]]),
        ("mo_tside", vec![vec![]]),
        ("mo_tside3", vec![vec![]]),
        ("mo_rows", vec![vec![]]),
        ("mo_rows16", vec![vec![]]),
        ("mo_cols", vec![vec![]]),
    ];
    for (name, startss) in cases {
        let s = spec(name);
        for (n, starts) in startss.into_iter().enumerate() {
            let given = (!starts.is_empty()).then(|| with_starts(&s, &starts));
            // Naive index arithmetic with XLA's launch and the first inputs (each compile
            // costs about a second).
            for (k, (label, l)) in sweep::launches(&s).into_iter().enumerate() {
                let l = l.unwrap_or_else(|e| panic!("{name} {label}: {e}"));
                let modes: &[bool] = if k == 0 && n == 0 {
                    &[false, true]
                } else {
                    &[false]
                };
                for &naive in modes {
                    check_inputs(&s, &l, naive, naive, given.as_deref()).unwrap_or_else(|e| {
                        panic!("{name} {label} naive={naive} starts={starts:?}: {e}")
                    });
                    checked += 1;
                }
            }
            let modes: &[bool] = if n == 0 { &[false, true] } else { &[false] };
            for &naive in modes {
                check_c(&s, naive, given.as_deref())
                    .unwrap_or_else(|e| panic!("{name} C naive={naive} starts={starts:?}: {e}"));
            }
        }
    }
    assert!(checked >= 20, "{checked} CUDA kernels checked");
}

#[test]
fn multi_output_fusions_share_the_loop_and_the_tile() {
    let s = spec("multi");
    assert_eq!(s.more_outputs.len(), 2);
    let l = launch::choose(&s, LaunchConfig::default(), None).unwrap();
    assert_eq!(l.strategy, Strategy::Loop);
    let t = spec("multi_transpose");
    let l = launch::choose(&t, LaunchConfig::default(), None).unwrap();
    assert!(matches!(l.strategy, Strategy::TiledTranspose { .. }));
    let src = ixmap::gpu::emit::cuda::emit(&t, &l, false).unwrap().source;
    assert!(src.contains("out1["), "{src}");
}

/// What is not emitted says so: outputs of another element count than output 0 (outside
/// a reduction), reductions of other dimensions than output 0's, a reduction after a
/// non-reduction output, a side output of a reduction in neither of its shapes.
#[test]
fn unsupported_roots_are_refused_with_a_reason() {
    let mut s = Session::new();
    let text = "
add_f32 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
two_counts {
  p0 = f32[4,8] parameter(0)
  p1 = f32[5] parameter(1)
  ROOT t = (f32[4,8], f32[5]) tuple(p0, p1)
}
two_dims {
  p0 = f32[4,8] parameter(0)
  z = f32[] constant(0)
  a = f32[4] reduce(p0, z), dimensions={1}, to_apply=add_f32
  e = f32[4,8] exponential(p0)
  b = f32[8] reduce(e, z), dimensions={0}, to_apply=add_f32
  ROOT t = (f32[4], f32[8]) tuple(a, b)
}
late_reduce {
  p0 = f32[4,8] parameter(0)
  z = f32[] constant(0)
  e = f32[4,8] exponential(p0)
  a = f32[4] reduce(p0, z), dimensions={1}, to_apply=add_f32
  ROOT t = (f32[4,8], f32[4]) tuple(e, a)
}
odd_side {
  p0 = f32[4,8] parameter(0)
  p1 = f32[2,16] parameter(1)
  z = f32[] constant(0)
  a = f32[4] reduce(p0, z), dimensions={1}, to_apply=add_f32
  ROOT t = (f32[4], f32[2,16]) tuple(a, p1)
}
";
    for o in s.execute(text) {
        assert!(o.result.is_ok(), "{:?}", o.result);
    }
    for (name, why) in [
        ("two_counts", "element count"),
        ("two_dims", "reduce the same dimensions"),
        ("late_reduce", "first output"),
        ("odd_side", "the reduction's shape or its operand's"),
    ] {
        let e = sweep::spec_for(&s.hlo, name).unwrap().unwrap_err();
        assert!(e.contains(why), "{name}: {e}");
    }
}

/// Every further output of a multi-output fusion is written exactly once by its thread
/// map: the bitcast map of a loop, the transpose's side output in phase 1, a reduction's
/// side outputs where it reads, further reductions where output 0 is written, in their
/// group's blocks (`bl_y`).
#[test]
fn multi_output_thread_maps_write_each_element_once() {
    for name in [
        "multi",
        "mo_bitcast",
        "mo_tside",
        "mo_tside3",
        "mo_rows",
        "mo_rows16",
        "mo_cols",
        "mo_rows16x",
        "mo_colsx",
    ] {
        let s = spec(name);
        for (label, l) in sweep::launches(&s) {
            let l = l.unwrap_or_else(|e| panic!("{name} {label}: {e}"));
            let writes = launch::more_output_writes(&s, &l)
                .unwrap_or_else(|e| panic!("{name} {label}: {e}"));
            for (o, w) in s.more_outputs.iter().zip(&writes) {
                let t = &o.tensor;
                let strides = t.strides().unwrap();
                let mut seen = vec![0u32; t.num_elements().unwrap() as usize];
                DomainPoints::for_each(&w.map, &Default::default(), &mut |_, r| {
                    let off: i64 = r.iter().zip(&strides).map(|(a, b)| a * b).sum();
                    seen[off as usize] += 1;
                    Ok(true)
                })
                .expect("enumerate");
                assert!(
                    seen.iter().all(|&k| k == 1),
                    "{name} {label} {}: {seen:?}",
                    t.name
                );
                // The group's blocks write it: bl_y is its group.
                let bl_y = &w.map.dims[4].bounds;
                assert_eq!((bl_y.lo, bl_y.hi), (w.group as i64, w.group as i64));
            }
        }
    }
    // What runs where: the transpose's side output from the tile read (input layout), the
    // reductions' groups by XLA's rule (GroupDisjointReductions: roots that read a shared
    // parameter are tied, so s, m and n, all reading p0, are one group).
    let t = spec("mo_tside");
    let l = launch::choose(&t, LaunchConfig::default(), None).unwrap();
    let w = launch::more_output_writes(&t, &l).unwrap();
    assert!(w[0].while_reading && !w[1].while_reading);
    let r = spec("mo_rows16");
    assert_eq!(r.groups(), 1);
    let l = launch::choose(&r, LaunchConfig::default(), None).unwrap();
    assert_eq!(l.grid[1], 1);
    let r = spec("mo_rows");
    assert_eq!(r.groups(), 1, "s, e and m share the exponential");
    // With disjoint parameters the roots are independent: s, m and n are three groups, and
    // in mo_colsx s with its side output a (p0, p1) and m (p2) are two; each group's
    // outputs are written by its own blocks (checked above).
    let r = spec("mo_rows16x");
    assert_eq!(r.groups(), 3);
    let l = launch::choose(&r, LaunchConfig::default(), None).unwrap();
    assert_eq!(l.grid[1], 3);
    assert_eq!(spec("mo_colsx").groups(), 2);
}

/// A scatter's thread → output map: update element (u, c) of `sc_rows` lands on row rt0
/// (read from the indices), column c; rt0 in [0, 9] (a window of one row fits there).
#[test]
fn scatter_maps_follow_xla_semantics() {
    let s = spec("sc_rows");
    let l = launch::choose(&s, LaunchConfig::default(), None).unwrap();
    assert_eq!(l.strategy, Strategy::Scatter);
    let w = l.write_map.to_string();
    assert!(w.contains("{rt0}") && w.contains("rt0 in [0, 9]"), "{w}");
    // The patches: rt0 (rows) and rt1 (columns) in [0, 4] for 2x3 windows of a 6x7 operand.
    let p = spec("sc_patches");
    let l = launch::choose(&p, LaunchConfig::default(), None).unwrap();
    let w = l.write_map.to_string();
    assert!(
        w.contains("rt0 in [0, 4]") && w.contains("rt1 in [0, 4]"),
        "{w}"
    );
}

/// Scatters of every width of element type (issue 14's types meet its scatter): repeated
/// rows land on one element, so the GPU's combining store is an atomic read-modify-write
/// (`atomicAdd`, a compare-and-swap loop, or for 1- and 2-byte types a compare-and-swap of
/// the 32-bit word holding the element), with the reference's arithmetic per type (s8
/// wraps, f16 and bf16 round after each combine). Run as CUDA on the CPU (the threads of a
/// block are fibers on one OS thread: the combines' arithmetic is checked, not their
/// atomicity under contention) and as C, every element checked against the reference.
#[test]
fn scatters_of_every_element_width_combine_exactly() {
    if !has_cxx() {
        assert!(std::env::var("CI").is_err(), "CI and no C++ compiler");
        eprintln!("*** SKIPPED: no C++ compiler");
        return;
    }
    let cases = [
        ("s8", "add"),
        ("u16", "minimum"),
        ("f16", "add"),
        ("bf16", "maximum"),
        ("s64", "multiply"),
        ("pred", "maximum"),
    ];
    let mut hlo = String::new();
    for (t, op) in cases {
        hlo += &format!(
            "comb_{t} {{\n  x = {t}[] parameter(0)\n  y = {t}[] parameter(1)\n  ROOT r = {t}[] {op}(x, y)\n}}\n\
             sc_{t} {{\n  operand = {t}[10,8] parameter(0)\n  indices = s32[5,1] parameter(1)\n  updates = {t}[5,3] parameter(2)\n  \
             ROOT s = {t}[10,8] scatter(operand, indices, updates), update_window_dims={{1}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=comb_{t}\n}}\n"
        );
    }
    let mut s = Session::new();
    for o in s.execute(&hlo) {
        assert!(o.result.is_ok(), "{:?}", o.result);
    }
    for (t, _) in cases {
        let name = format!("sc_{t}");
        let spec = sweep::spec_for(&s.hlo, &name)
            .unwrap_or_else(|| panic!("{name} is defined"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // Row 3 three times (combined), 9 (the last that fits), 10 (skipped).
        let given = with_starts(&spec, &[3, 3, 9, 3, 10]);
        let l = launch::choose(&spec, LaunchConfig::default(), None)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        check_inputs(&spec, &l, false, false, Some(&given))
            .unwrap_or_else(|e| panic!("{name} CUDA on the CPU: {e}"));
        check_c(&spec, false, Some(&given)).unwrap_or_else(|e| panic!("{name} C: {e}"));
    }
}

/// A spec from HLO text (the fusion `name` defined in it).
fn spec_from(hlo: &str, name: &str) -> KernelSpec {
    let mut s = Session::new();
    for o in s.execute(hlo) {
        assert!(o.result.is_ok(), "{:?}", o.result);
    }
    sweep::spec_for(&s.hlo, name)
        .unwrap_or_else(|| panic!("{name} is defined"))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// XLA's `ComputeMaxUnrollFactor` and `GetVectorSizeForMlir`, on the values their sources
/// document (gpu_fusible.cc, reduction_base.cc).
#[test]
fn xla_unroll_and_row_vector_rules() {
    use launch::{xla_max_unroll, xla_row_vector};
    assert_eq!(xla_max_unroll(4096 * 1024), 4);
    assert_eq!(xla_max_unroll(6), 2);
    assert_eq!(xla_max_unroll(7), 1);
    // Rows: odd, or too short for two per thread: 1; 32-bit inputs: 2; narrower: 4 when
    // the row holds four per thread and divides by 4, else 2.
    assert_eq!(xla_row_vector(1023, 64, 32), 1);
    assert_eq!(xla_row_vector(32, 32, 32), 1);
    assert_eq!(xla_row_vector(1024, 64, 32), 2);
    assert_eq!(xla_row_vector(1024, 64, 64), 2);
    assert_eq!(xla_row_vector(1024, 64, 16), 4);
    assert_eq!(xla_row_vector(64, 32, 16), 2);
    assert_eq!(xla_row_vector(1030, 32, 16), 2);
}

/// The default launch: loops unroll by 4 only when the output fills the device (an H100's
/// 270336 resident threads), within a row of the minor dimension; 16-bit loops widen to
/// 128-bit vectors where every operand reads a run; row reductions read 2 f32 at a time
/// on blocks of 256; the transpose is XLA's 32x32 tile. Every default launch covers its
/// output exactly once and its kernel runs verified on the CPU (CUDA on the CPU).
#[test]
fn default_launches_follow_xla() {
    use launch::{choose_default, DeviceLimits};
    let hlo = "
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
big {
  p0 = f32[4096,1024] parameter(0)
  p1 = f32[1024] parameter(1)
  b = f32[4096,1024] broadcast(p1), dimensions={1}
  ROOT m = f32[4096,1024] multiply(p0, b)
}
small {
  p0 = f32[20,40,300] parameter(0)
  ROOT n = f32[20,40,300] negate(p0)
}
narrow {
  p0 = f32[100000,6] parameter(0)
  ROOT n = f32[100000,6] negate(p0)
}
half {
  p0 = f16[2048,1024] parameter(0)
  p1 = f16[2048,1024] parameter(1)
  ROOT a = f16[2048,1024] add(p0, p1)
}
half_bcast {
  p0 = f16[2048,1024] parameter(0)
  p1 = f16[2048] parameter(1)
  b = f16[2048,1024] broadcast(p1), dimensions={0}
  ROOT a = f16[2048,1024] add(p0, b)
}
rowsum {
  p0 = f32[4096,1024] parameter(0)
  z = f32[] constant(0)
  ROOT s = f32[4096] reduce(p0, z), dimensions={1}, to_apply=add_f32
}
shortrows {
  p0 = f32[4096,16] parameter(0)
  z = f32[] constant(0)
  ROOT s = f32[4096] reduce(p0, z), dimensions={1}, to_apply=add_f32
}
tr {
  p0 = f32[512,256] parameter(0)
  ROOT t = f32[256,512] transpose(p0), dimensions={1,0}
}
";
    let dev = DeviceLimits::H100;
    assert_eq!(dev.resident_threads(), 270336);
    let cfg = |name: &str| {
        let spec = spec_from(hlo, name);
        let (l, d) = choose_default(&spec, None, dev).expect("launch");
        (spec, l, d)
    };
    let (_, l, d) = cfg("big");
    assert_eq!(
        (l.strategy.clone(), l.config.vector, l.block[0]),
        (Strategy::Loop, 4, 128)
    );
    assert_eq!(l.grid[0], 4096 * 1024 / 4 / 128);
    assert!(
        d.rules.iter().any(|r| r.contains("ComputeMaxUnrollFactor")),
        "{:?}",
        d.rules
    );
    // 240000 elements: fewer than the device's threads, one per thread.
    let (_, l, d) = cfg("small");
    assert_eq!(l.config.vector, 1);
    assert!(
        d.rules[0].contains("fewer than the 270336 threads"),
        "{:?}",
        d.rules
    );
    // XLA's 4 does not divide the minor dimension (6): 2.
    assert_eq!(cfg("narrow").1.config.vector, 2);
    // f16 everywhere, every operand read in runs: 8 halves, one 128-bit access.
    assert_eq!(cfg("half").1.config.vector, 8);
    // A broadcast of the rows reads one element for the whole vector: no narrower access,
    // so 8 as well.
    assert_eq!(cfg("half_bcast").1.config.vector, 8);
    let (_, l, _) = cfg("rowsum");
    assert_eq!(
        (l.strategy.clone(), l.config.vector, l.block[0]),
        (Strategy::RowReduction, 2, 256)
    );
    // A row of 16 f32: 16 lanes, two rows a warp, one element per load (XLA's rows per warp).
    let (_, l, _) = cfg("shortrows");
    assert_eq!((l.config.vector, l.row_threads, l.block[0]), (1, 16, 256));
    let (_, l, d) = cfg("tr");
    assert!(matches!(l.strategy, Strategy::TiledTranspose { .. }));
    assert_eq!(l.block[0], 128);
    assert!(d.rules[0].contains("32x32"));
}

/// The default launches of small shapes of each kind run verified on the CPU (the CUDA
/// kernel compiled for the host and checked element by element against the reference).
#[test]
fn default_launches_run_verified_on_the_cpu() {
    use launch::{choose_default, DeviceLimits};
    // A device of 1 SM and 64 threads, so that small outputs take XLA's unrolled launch.
    let dev = DeviceLimits {
        sms: 1,
        threads_per_sm: 64,
    };
    let hlo = "
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ew {
  p0 = f32[48,64] parameter(0)
  p1 = f32[64] parameter(1)
  b = f32[48,64] broadcast(p1), dimensions={1}
  ROOT m = f32[48,64] multiply(p0, b)
}
hv {
  p0 = f16[16,64] parameter(0)
  p1 = f16[16,64] parameter(1)
  ROOT a = f16[16,64] add(p0, p1)
}
rs {
  p0 = f32[40,128] parameter(0)
  z = f32[] constant(0)
  ROOT s = f32[40] reduce(p0, z), dimensions={1}, to_apply=add_f32
}
";
    for (name, vector) in [("ew", 4), ("hv", 8), ("rs", 2)] {
        let spec = spec_from(hlo, name);
        let (l, _) = choose_default(&spec, None, dev).expect("launch");
        assert_eq!(l.config.vector, vector, "{name}");
        for naive in [false, true] {
            let r = ixmap::gpu::cuda_cpu::check(&spec, &l, naive);
            assert!(r.is_ok(), "{name} naive={naive}: {r:?}");
        }
    }
}
