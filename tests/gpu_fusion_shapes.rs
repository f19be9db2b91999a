//! The fusion shapes real models produce (issue 27, item 4), each as a small hand-written
//! fusion: the reference interpreter checked against a brute-force evaluation of the HLO
//! semantics written here (XLA's operation semantics: iota, pad with negative and interior
//! padding, reduce-window with padding that reads the init value, base and window
//! dilation, dynamic-slice with computed starts clamped into bounds, a reduce whose init is
//! a parameter, reductions of several dimensions, copy / bitcast / transpose under
//! elementwise consumers), then the C kernel and the CUDA kernel run on the CPU, element
//! by element against the reference. Item 6: a fusion with an op that has no emitter is
//! still analysed (accesses, launch) and refused by the emitters, naming the op.

use ixmap::gpu::cuda_cpu::{check_c, check_inputs};
use ixmap::gpu::launch::{self, LaunchConfig};
use ixmap::gpu::reference::{make_inputs, read_value, Reference};
use ixmap::gpu::spec::KernelSpec;
use ixmap::gpu::sweep;

const REDUCERS: &str = "add_f32 {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\
max_f32 {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT m = f32[] maximum(x, y)\n}\n";

fn has_cxx() -> bool {
    std::process::Command::new(ixmap::gpu::cuda_cpu::compiler())
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn spec_of(text: &str, name: &str) -> KernelSpec {
    let mut s = ixmap::Session::new();
    for o in s.execute(&format!("{REDUCERS}{text}")) {
        assert!(o.result.is_ok(), "{name}: {:?}", o.result);
    }
    sweep::spec_for(&s.hlo, name)
        .unwrap_or_else(|| panic!("{name} is not defined"))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Input `k` of `spec` at the row-major index `idx` (the test's inputs are row-major).
fn input(spec: &KernelSpec, inputs: &[Vec<u8>], k: usize, idx: &[i64]) -> f64 {
    let t = &spec.inputs[k];
    assert_eq!(idx.len(), t.rank());
    let mut off = 0i64;
    for (i, (&x, &d)) in idx.iter().zip(&t.dims).enumerate() {
        assert!((0..d).contains(&x), "{}: index {i} = {x} of {d}", t.name);
        off = off * d + x;
    }
    read_value(&inputs[k], t.elem, off as usize)
}

/// Every row-major index of `dims`.
fn indices(dims: &[i64]) -> Vec<Vec<i64>> {
    let mut out = vec![vec![]];
    for &d in dims {
        out = out
            .into_iter()
            .flat_map(|p| {
                (0..d).map(move |i| {
                    let mut q = p.clone();
                    q.push(i);
                    q
                })
            })
            .collect();
    }
    out
}

/// The reference agrees with `brute` (output 0, row-major) on every element, exactly; then
/// the C kernel and the CUDA kernel on the CPU (simplified and naive index arithmetic)
/// agree with the reference on every element.
fn verify(spec: &KernelSpec, inputs: &[Vec<u8>], brute: &dyn Fn(&[i64]) -> f64) {
    let want = Reference::new(spec, inputs)
        .and_then(|r| r.outputs())
        .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
    let out = &spec.output;
    assert_eq!(
        out.minor_to_major,
        (0..out.rank()).rev().collect::<Vec<_>>(),
        "{}: the test's outputs are row-major",
        spec.name
    );
    let all = indices(&out.dims);
    assert_eq!(all.len(), want[0].len(), "{}", spec.name);
    for (idx, v) in all.iter().zip(&want[0]) {
        let b = brute(idx);
        let r = v.to_f64(out.elem);
        assert!(
            r == b || (r.is_nan() && b.is_nan()),
            "{} at {idx:?}: reference {r}, brute force {b}",
            spec.name
        );
    }
    if !has_cxx() {
        assert!(std::env::var("CI").is_err(), "CI and no C++ compiler");
        eprintln!("*** SKIPPED the emitted kernels: no C++ compiler");
        return;
    }
    let launch = launch::choose(spec, LaunchConfig::default(), None)
        .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
    for naive in [false, true] {
        check_c(spec, naive, Some(inputs))
            .unwrap_or_else(|e| panic!("{} C naive={naive}: {e}", spec.name));
        check_inputs(spec, &launch, naive, false, Some(inputs))
            .unwrap_or_else(|e| panic!("{} CUDA on the CPU naive={naive}: {e}", spec.name));
    }
}

fn verify_default(spec: &KernelSpec, brute: &dyn Fn(&[Vec<u8>], &[i64]) -> f64) {
    let inputs = make_inputs(spec).unwrap();
    verify(spec, &inputs, &|idx| brute(&inputs, idx));
}

#[test]
fn iota_in_a_fusion_is_its_index_converted() {
    let spec = spec_of(
        "fi {\n  p0 = f32[6,5] parameter(0)\n  i = s32[6,5] iota(), iota_dimension=1\n\
         c = f32[6,5] convert(i)\n  ROOT a = f32[6,5] add(p0, c)\n}\n",
        "fi",
    );
    verify_default(&spec, &|inp, idx| input(&spec, inp, 0, idx) + idx[1] as f64);
    let spec = spec_of(
        "fj {\n  ROOT i = s32[3,4,5] iota(), iota_dimension=0\n}\n",
        "fj",
    );
    verify_default(&spec, &|_, idx| idx[0] as f64);
}

/// A small array constant inside a fusion: each element read at the index its users'
/// maps give (here through a transpose, and as integers through a gather-free convert).
#[test]
fn array_constants_are_read_at_their_index() {
    let spec = spec_of(
        "fk {\n  p = f32[2,3] parameter(0)\n  c = f32[2,3] constant({ {1, 2, 3}, {4.5, -5, 6} })\n\
         ct = f32[3,2] transpose(c), dimensions={1,0}\n  pt = f32[3,2] transpose(p), dimensions={1,0}\n\
         ROOT a = f32[3,2] add(pt, ct)\n}\n",
        "fk",
    );
    let c = [[1.0, 2.0, 3.0], [4.5, -5.0, 6.0]];
    verify_default(&spec, &|inp, idx| {
        input(&spec, inp, 0, &[idx[1], idx[0]]) + c[idx[1] as usize][idx[0] as usize]
    });
    let spec = spec_of(
        "fl {\n  p = f32[4] parameter(0)\n  c = s32[4] constant({7, -3, 0, 9})\n\
         f = f32[4] convert(c)\n  r = f32[4] reverse(f), dimensions={0}\n  ROOT m = f32[4] multiply(p, r)\n}\n",
        "fl",
    );
    let c = [7.0, -3.0, 0.0, 9.0];
    verify_default(&spec, &|inp, idx| {
        input(&spec, inp, 0, idx) * c[3 - idx[0] as usize]
    });
}

/// XLA's pad: output index `lo + i * (interior + 1)` holds operand element `i`; every other
/// position the padding value; negative `lo`/`hi` cut the edges.
fn pad_brute(n: &[i64], pads: &[(i64, i64, i64)], idx: &[i64]) -> Option<Vec<i64>> {
    let mut at = Vec::new();
    for ((&o, &(lo, _, interior)), &size) in idx.iter().zip(pads).zip(n) {
        let x = o - lo;
        if x < 0 || x % (interior + 1) != 0 || x / (interior + 1) >= size {
            return None;
        }
        at.push(x / (interior + 1));
    }
    Some(at)
}

#[test]
fn pad_reads_the_operand_or_the_padding_value() {
    let spec = spec_of(
        "fp {\n  p0 = f32[4,3] parameter(0)\n  p1 = f32[] parameter(1)\n\
         ROOT pd = f32[11,6] pad(p0, p1), padding=1_3_1x2_1_0\n}\n",
        "fp",
    );
    let pads = [(1, 3, 1), (2, 1, 0)];
    verify_default(&spec, &|inp, idx| match pad_brute(&[4, 3], &pads, idx) {
        Some(at) => input(&spec, inp, 0, &at),
        None => input(&spec, inp, 1, &[]),
    });
    // Negative edges and a padding value computed in the fusion, under an elementwise
    // consumer.
    let spec = spec_of(
        "fq {\n  p0 = f32[7,5] parameter(0)\n  p1 = f32[] parameter(1)\n\
         two = f32[] constant(2)\n  v = f32[] multiply(p1, two)\n\
         pd = f32[8,9] pad(p0, v), padding=-2_3_0x1_-1_1\n\
         ROOT n = f32[8,9] negate(pd)\n}\n",
        "fq",
    );
    let pads = [(-2, 3, 0), (1, -1, 1)];
    verify_default(&spec, &|inp, idx| match pad_brute(&[7, 5], &pads, idx) {
        Some(at) => -input(&spec, inp, 0, &at),
        None => -(input(&spec, inp, 1, &[]) * 2.0),
    });
}

/// XLA's reduce-window on one operand: output `o`, window position `s` reads the padded,
/// base-dilated operand at `o * stride + s * window_dilation`, which is an operand element
/// or (padding, holes of the base dilation) the init value; the fold starts from init.
#[allow(clippy::too_many_arguments)]
fn window_brute(
    spec: &KernelSpec,
    inp: &[Vec<u8>],
    n: &[i64],
    w: &[(i64, i64, i64, i64, i64, i64)],
    init: f64,
    op: fn(f64, f64) -> f64,
    idx: &[i64],
) -> f64 {
    let sizes: Vec<i64> = w.iter().map(|d| d.0).collect();
    let mut acc = init;
    for s in indices(&sizes) {
        let mut at = Vec::new();
        for (i, &(_, stride, lo, _, lhs, rhs)) in w.iter().enumerate() {
            let p = idx[i] * stride + s[i] * rhs - lo;
            if p < 0 || p % lhs != 0 || p / lhs >= n[i] {
                at.clear();
                break;
            }
            at.push(p / lhs);
        }
        let v = if at.len() == n.len() {
            input(spec, inp, 0, &at)
        } else {
            init
        };
        acc = op(acc, v);
    }
    // The f32 result.
    acc as f32 as f64
}

#[test]
fn reduce_window_pools_pads_with_the_init_value_and_dilates() {
    // Max pooling 3×2, stride 2, padded by 1 on every side.
    let spec = spec_of(
        "frw {\n  p0 = f32[10,7] parameter(0)\n  c = f32[] constant(-inf)\n\
         ROOT rw = f32[5,4] reduce-window(p0, c), window={size=3x2 stride=2x2 pad=1_1x1_1}, to_apply=max_f32\n}\n",
        "frw",
    );
    let w = [(3, 2, 1, 1, 1, 1), (2, 2, 1, 1, 1, 1)];
    verify_default(&spec, &|inp, idx| {
        window_brute(&spec, inp, &[10, 7], &w, f64::NEG_INFINITY, f64::max, idx)
    });
    // A cumulative sum (JAX's cumsum): a window of the whole length padded at the front.
    let spec = spec_of(
        "fcs {\n  p0 = f32[12] parameter(0)\n  c = f32[] constant(0)\n\
         ROOT rw = f32[12] reduce-window(p0, c), window={size=12 pad=11_0}, to_apply=add_f32\n}\n",
        "fcs",
    );
    let w = [(12, 1, 11, 0, 1, 1)];
    verify_default(&spec, &|inp, idx| {
        window_brute(&spec, inp, &[12], &w, 0.0, |a, b| a + b, idx)
    });
    // Base and window dilation, and an init value that is not the identity: every padded
    // position and hole adds it again.
    let spec = spec_of(
        "fdl {\n  p0 = f32[5] parameter(0)\n  c = f32[] constant(0.5)\n\
         ROOT rw = f32[8] reduce-window(p0, c), window={size=3 pad=2_1 lhs_dilate=2 rhs_dilate=2}, to_apply=add_f32\n}\n",
        "fdl",
    );
    let w = [(3, 1, 2, 1, 2, 2)];
    verify_default(&spec, &|inp, idx| {
        window_brute(&spec, inp, &[5], &w, 0.5, |a, b| a + b, idx)
    });
}

#[test]
fn dynamic_slice_with_computed_starts_is_clamped_into_bounds() {
    let spec = spec_of(
        "fds {\n  p0 = f32[10,8] parameter(0)\n  p1 = s32[] parameter(1)\n\
         three = s32[] constant(3)\n  o0 = s32[] add(p1, three)\n\
         two = s32[] constant(2)\n  o1 = s32[] multiply(p1, two)\n\
         ds = f32[4,3] dynamic-slice(p0, o0, o1), dynamic_slice_sizes={4,3}\n\
         ROOT e = f32[4,3] add(ds, ds)\n}\n",
        "fds",
    );
    let mut inputs = make_inputs(&spec).unwrap();
    // Starts below 0, inside, and past the end on each dimension.
    for p1 in [-9i32, 2, 100] {
        inputs[1] = p1.to_le_bytes().to_vec();
        let s0 = (i64::from(p1) + 3).clamp(0, 10 - 4);
        let s1 = (i64::from(p1) * 2).clamp(0, 8 - 3);
        let sp = &spec;
        let inp = inputs.clone();
        verify(&spec, &inputs, &|idx| {
            2.0 * input(sp, &inp, 0, &[idx[0] + s0, idx[1] + s1])
        });
    }
}

/// Gather with indices computed in the fusion (the `embed` model's `take`): XLA's operation
/// semantics clamp each start so the slice stays in the operand; dimensions not in
/// `start_index_map` start at 0; a collapsed dimension is not in the output.
#[test]
fn gather_with_computed_indices_is_clamped_into_bounds() {
    let spec = spec_of(
        "fg {\n  p0 = f32[7,5,4] parameter(0)\n  p1 = s32[3,2] parameter(1)\n\
         one = s32[] constant(1)\n  b = s32[3,2] broadcast(one), dimensions={}\n\
         ix = s32[3,2] add(p1, b)\n\
         g = f32[3,2,4] gather(p0, ix), offset_dims={1,2}, collapsed_slice_dims={0}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,2,4}\n\
         ROOT e = f32[3,2,4] negate(g)\n}\n",
        "fg",
    );
    let mut inputs = make_inputs(&spec).unwrap();
    // Rows of starts below 0, inside, and past the end on each dimension.
    let rows: [[i32; 2]; 3] = [[-9, 100], [2, 1], [40, -3]];
    inputs[1] = rows
        .iter()
        .flatten()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let sp = &spec;
    let inp = inputs.clone();
    verify(&spec, &inputs, &|idx| {
        let r = rows[idx[0] as usize];
        let s0 = (i64::from(r[0]) + 1).clamp(0, 7 - 1);
        let s1 = (i64::from(r[1]) + 1).clamp(0, 5 - 2);
        -input(sp, &inp, 0, &[s0, s1 + idx[1], idx[2]])
    });
    // The index vector dimension implicit (index_vector_dim = rank), one start, a slice
    // of the whole row: an embedding lookup.
    let spec = spec_of(
        "fe {\n  p0 = f32[6,4] parameter(0)\n  p1 = s32[5] parameter(1)\n\
         g = f32[5,4] gather(p0, p1), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}\n\
         ROOT e = f32[5,4] add(g, g)\n}\n",
        "fe",
    );
    let mut inputs = make_inputs(&spec).unwrap();
    let ids: [i32; 5] = [0, 5, 6, -1, 3];
    inputs[1] = ids.iter().flat_map(|x| x.to_le_bytes()).collect();
    let sp = &spec;
    let inp = inputs.clone();
    verify(&spec, &inputs, &|idx| {
        let row = i64::from(ids[idx[0] as usize]).clamp(0, 5);
        2.0 * input(sp, &inp, 0, &[row, idx[1]])
    });
}

/// A dot whose consumer reduces its rows (the CPU attention's `ynn_fusion.2`: scores, their
/// row max, `exp(s - max)`) is not a GEMM epilogue: the fusion is an ordinary kernel with
/// the dot a reduction of products.
#[test]
fn a_dot_under_a_row_reduction_is_a_reduction_of_products() {
    let spec = spec_of(
        "fsm {\n  q = f32[2,3,4] parameter(0)\n  k = f32[2,5,4] parameter(1)\n\
         d = f32[2,3,5] dot(q, k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}\n\
         c = f32[] constant(-inf)\n\
         m = f32[2,3] reduce(d, c), dimensions={2}, to_apply=max_f32\n\
         mb = f32[2,3,5] broadcast(m), dimensions={0,1}\n\
         ROOT s = f32[2,3,5] subtract(d, mb)\n}\n",
        "fsm",
    );
    verify_default(&spec, &|inp, idx| {
        let dot = |b: i64, i: i64, j: i64| {
            // The inputs are multiples of 1/64 in [-8, 8): products and their sums of four
            // are exact in f32, so the order of the sum does not matter.
            (0..4)
                .map(|c| input(&spec, inp, 0, &[b, i, c]) * input(&spec, inp, 1, &[b, j, c]))
                .sum::<f64>()
        };
        let max = (0..5)
            .map(|j| dot(idx[0], idx[1], j))
            .fold(f64::NEG_INFINITY, f64::max);
        dot(idx[0], idx[1], idx[2]) - max
    });
}

#[test]
fn reduce_with_a_parameter_init_and_of_several_dimensions() {
    let spec = spec_of(
        "fri {\n  p0 = f32[8,6] parameter(0)\n  p1 = f32[] parameter(1)\n\
         ROOT r = f32[8] reduce(p0, p1), dimensions={1}, to_apply=add_f32\n}\n",
        "fri",
    );
    verify_default(&spec, &|inp, idx| {
        let mut acc = input(&spec, inp, 1, &[]);
        for j in 0..6 {
            acc += input(&spec, inp, 0, &[idx[0], j]);
        }
        acc
    });
    let spec = spec_of(
        "fmd {\n  p0 = f32[4,5,6] parameter(0)\n  c = f32[] constant(-inf)\n\
         ROOT r = f32[5] reduce(p0, c), dimensions={0,2}, to_apply=max_f32\n}\n",
        "fmd",
    );
    verify_default(&spec, &|inp, idx| {
        let mut acc = f64::NEG_INFINITY;
        for i in 0..4 {
            for k in 0..6 {
                acc = acc.max(input(&spec, inp, 0, &[i, idx[0], k]));
            }
        }
        acc
    });
}

#[test]
fn copy_bitcast_and_transpose_under_elementwise_consumers() {
    let spec = spec_of(
        "fct {\n  p0 = f32[6,40] parameter(0)\n  p1 = f32[40,6] parameter(1)\n\
         t = f32[40,6] transpose(p0), dimensions={1,0}\n  cp = f32[40,6] copy(p1)\n\
         m = f32[40,6] multiply(t, cp)\n  b = f32[240] bitcast(m)\n\
         ROOT n = f32[240] negate(b)\n}\n",
        "fct",
    );
    verify_default(&spec, &|inp, idx| {
        let (i, j) = (idx[0] / 6, idx[0] % 6);
        -(input(&spec, inp, 0, &[j, i]) * input(&spec, inp, 1, &[i, j]))
    });
}

/// Item 6: an op with no emitter (a convolution) keeps its operands' maps: the accesses and
/// the launch are known, and every emitter refuses it, naming the op and the instruction.
#[test]
fn an_op_without_emitter_is_analysed_and_refused_by_name() {
    let spec = spec_of(
        "fcv {\n  p0 = f32[1,8,8,3] parameter(0)\n  p1 = f32[3,3,3,2] parameter(1)\n\
         conv = f32[1,6,6,2] convolution(p0, p1), window={size=3x3}, dim_labels=b01f_01io->b01f\n\
         ROOT r = f32[1,6,6,2] negate(conv)\n}\n",
        "fcv",
    );
    let acc = spec.input_accesses().unwrap();
    assert_eq!(
        acc.iter().map(|a| a.input).collect::<Vec<_>>(),
        vec![0, 1],
        "{acc:?}"
    );
    // Each access reads the window: range variables over the 3×3×3 window.
    assert!(acc.iter().all(|a| !a.map.ranges.is_empty()), "{acc:?}");
    let l = launch::choose(&spec, LaunchConfig::default(), None).unwrap();
    assert_eq!(l.strategy.name(), "loop");
    let want = "convolution has no emitter yet (`conv`)";
    let e = ixmap::gpu::emit::cpu::emit(&spec, false).unwrap_err();
    assert_eq!(e.to_string(), want);
    let e = ixmap::gpu::emit::cuda::emit(&spec, &l, false).unwrap_err();
    assert_eq!(e.to_string(), want);
    let inputs = make_inputs(&spec).unwrap();
    let e = Reference::new(&spec, &inputs).err().expect("refused");
    assert_eq!(e.to_string(), want);
}

/// A scatter whose indices the fusion computes (the max-pool gradient's: a concatenate of
/// index tensors): XLA skips an update whose window does not fit in the operand, and
/// combines updates that land on one element.
#[test]
fn scatter_with_computed_indices_and_a_concatenate_inside_the_body() {
    let spec = spec_of(
        "fsc {\n  p0 = f32[6,5] parameter(0)\n  p1 = s32[7] parameter(1)\n  p2 = s32[7] parameter(2)\n\
         b1 = s32[7,1] bitcast(p1)\n  b2 = s32[7,1] bitcast(p2)\n\
         c = s32[7,2] concatenate(b1, b2), dimensions={1}\n\
         one = f32[] constant(1)\n  u = f32[7,1,2] broadcast(one), dimensions={}\n\
         ROOT s = f32[6,5] scatter(p0, c, u), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1, to_apply=add_f32\n}\n",
        "fsc",
    );
    let mut inputs = make_inputs(&spec).unwrap();
    // Rows and columns in bounds, past the end, negative, and repeated.
    let rows: [i32; 7] = [0, 5, 6, -1, 2, 2, 3];
    let cols: [i32; 7] = [0, 3, 1, 1, 4, 1, 1];
    inputs[1] = rows.iter().flat_map(|v| v.to_le_bytes()).collect();
    inputs[2] = cols.iter().flat_map(|v| v.to_le_bytes()).collect();
    let inp = inputs.clone();
    let sp = &spec;
    verify(&spec, &inputs, &|idx| {
        let mut v = input(sp, &inp, 0, idx);
        for (&r, &c) in rows.iter().zip(&cols) {
            // The window is 1×2: it fits when r in [0, 5] and c in [0, 3].
            let fits = (0..6).contains(&r) && (0..4).contains(&c);
            if fits && idx[0] == i64::from(r) && (i64::from(c)..i64::from(c) + 2).contains(&idx[1])
            {
                v += 1.0;
            }
        }
        v
    });
    let spec = spec_of(
        "fcat {\n  p0 = f32[3,4] parameter(0)\n  p1 = f32[5,4] parameter(1)\n\
         c = f32[8,4] concatenate(p0, p1), dimensions={0}\n  ROOT n = f32[8,4] negate(c)\n}\n",
        "fcat",
    );
    verify_default(&spec, &|inp, idx| {
        if idx[0] < 3 {
            -input(&spec, inp, 0, idx)
        } else {
            -input(&spec, inp, 1, &[idx[0] - 3, idx[1]])
        }
    });
}

const ARGMAX: &str = "argmax_r {\n  av = f32[] parameter(0)\n  ai = s32[] parameter(1)\n\
  bv = f32[] parameter(2)\n  bi = s32[] parameter(3)\n\
  gt = pred[] compare(av, bv), direction=GT\n  eq = pred[] compare(av, bv), direction=EQ\n\
  lt = pred[] compare(ai, bi), direction=LT\n  tie = pred[] and(eq, lt)\n\
  pick = pred[] or(gt, tie)\n  v = f32[] select(pick, av, bv)\n\
  i = s32[] select(pick, ai, bi)\n  ROOT t = (f32[], s32[]) tuple(v, i)\n}\n";

/// Argmax: a variadic reduce of the values and their iota, its reducer returning a tuple
/// (the larger value, the smaller index on ties), read through get-tuple-element and as a
/// tuple root; and a variadic reduce-window (max pooling that keeps the position).
#[test]
fn variadic_reductions_argmax_and_pooling_with_positions() {
    let spec = spec_of(
        &format!(
            "{ARGMAX}fam {{\n  p0 = f32[6,9] parameter(0)\n  io = s32[6,9] iota(), iota_dimension=1\n\
             ninf = f32[] constant(-inf)\n  z = s32[] constant(0)\n\
             r = (f32[6], s32[6]) reduce(p0, io, ninf, z), dimensions={{1}}, to_apply=argmax_r\n\
             ROOT i = s32[6] get-tuple-element(r), index=1\n}}\n"
        ),
        "fam",
    );
    let argmax = |inp: &[Vec<u8>], sp: &KernelSpec, row: i64| {
        let mut best = (f64::NEG_INFINITY, 0i64);
        for j in 0..9 {
            let v = input(sp, inp, 0, &[row, j]);
            if v > best.0 {
                best = (v, j);
            }
        }
        best
    };
    verify_default(&spec, &|inp, idx| argmax(inp, &spec, idx[0]).1 as f64);
    let spec = spec_of(
        &format!(
            "{ARGMAX}fat {{\n  p0 = f32[6,9] parameter(0)\n  io = s32[6,9] iota(), iota_dimension=1\n\
             ninf = f32[] constant(-inf)\n  z = s32[] constant(0)\n\
             ROOT r = (f32[6], s32[6]) reduce(p0, io, ninf, z), dimensions={{1}}, to_apply=argmax_r\n}}\n"
        ),
        "fat",
    );
    assert_eq!(spec.more_outputs.len(), 1);
    verify_default(&spec, &|inp, idx| argmax(inp, &spec, idx[0]).0);
    let inputs = make_inputs(&spec).unwrap();
    let both = Reference::new(&spec, &inputs).unwrap().outputs().unwrap();
    for (row, v) in both[1].iter().enumerate() {
        assert_eq!(
            v.to_f64(ixmap::gpu::spec::ElemType::S32),
            argmax(&inputs, &spec, row as i64).1 as f64
        );
    }
    // Max pooling 2×2 that keeps the flat position of the maximum (the max-pool
    // gradient's forward pass).
    let spec = spec_of(
        &format!(
            "{ARGMAX}fpw {{\n  p0 = f32[8,6] parameter(0)\n  io = s32[8,6] iota(), iota_dimension=0\n\
             six = s32[] constant(6)\n  b6 = s32[8,6] broadcast(six), dimensions={{}}\n\
             r6 = s32[8,6] multiply(io, b6)\n  jo = s32[8,6] iota(), iota_dimension=1\n\
             flat = s32[8,6] add(r6, jo)\n  ninf = f32[] constant(-inf)\n  m1 = s32[] constant(-1)\n\
             w = (f32[4,3], s32[4,3]) reduce-window(p0, flat, ninf, m1), window={{size=2x2 stride=2x2}}, to_apply=argmax_r\n\
             ROOT i = s32[4,3] get-tuple-element(w), index=1\n}}\n"
        ),
        "fpw",
    );
    verify_default(&spec, &|inp, idx| {
        let mut best = (f64::NEG_INFINITY, -1i64);
        for a in 0..2 {
            for b in 0..2 {
                let (r, c) = (idx[0] * 2 + a, idx[1] * 2 + b);
                let v = input(&spec, inp, 0, &[r, c]);
                let f = r * 6 + c;
                if v > best.0 || (v == best.0 && f < best.1) {
                    best = (v, f);
                }
            }
        }
        best.1 as f64
    });
}

/// An in-place dynamic-update-slice whose starts the fusion computes: each clamped into
/// `[0, dim - update dim]` (XLA's semantics).
#[test]
fn dynamic_update_slice_with_computed_starts() {
    let spec = spec_of(
        "fdus {\n  p0 = f32[6,5] parameter(0)\n  p1 = f32[2,3] parameter(1)\n  p2 = s32[] parameter(2)\n\
         one = s32[] constant(1)\n  o0 = s32[] add(p2, one)\n  o1 = s32[] constant(4)\n\
         n = f32[2,3] negate(p1)\n\
         ROOT d = f32[6,5] dynamic-update-slice(p0, n, o0, o1)\n}\n",
        "fdus",
    );
    let mut inputs = make_inputs(&spec).unwrap();
    for p2 in [-7i32, 2, 50] {
        inputs[2] = p2.to_le_bytes().to_vec();
        let s0 = (i64::from(p2) + 1).clamp(0, 6 - 2);
        let s1 = 4i64.clamp(0, 5 - 3);
        let inp = inputs.clone();
        let sp = &spec;
        verify(&spec, &inputs, &|idx| {
            let (a, b) = (idx[0] - s0, idx[1] - s1);
            if (0..2).contains(&a) && (0..3).contains(&b) {
                -input(sp, &inp, 1, &[a, b])
            } else {
                input(sp, &inp, 0, idx)
            }
        });
    }
}

/// `scaled-dot` (issue 32, item 7), from its semantics: `(lhs · lhs_scale) @ (rhs ·
/// rhs_scale)`, each scale element covering a block of its operand (each dimension divided
/// by the scale's size: here blocks of 4 and of 2 along K, and one rhs scale for all 5 rows
/// of a batch). Emitted as a reduction of products, each operand element times its scale;
/// the scales are powers of two, so every product and sum is exact in f32 whatever the
/// order, and the reference must equal the brute force exactly.
#[test]
fn scaled_dot_is_a_reduction_of_scaled_products() {
    let spec = spec_of(
        "fsd {\n  l = f32[2,3,8] parameter(0)\n  r = f32[2,5,8] parameter(1)\n\
         ls = f32[2,3,2] parameter(2)\n  rs = f32[2,1,4] parameter(3)\n\
         ROOT sd = f32[2,3,5] scaled-dot(l, r, ls, rs), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={2}\n}\n",
        "fsd",
    );
    let mut inputs = make_inputs(&spec).unwrap();
    for k in [2, 3] {
        let n = spec.inputs[k].num_elements().unwrap() as usize;
        for i in 0..n {
            let v = 2f32.powi((i % 5) as i32 - 2);
            inputs[k][4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
            assert_eq!(read_value(&inputs[k], spec.inputs[k].elem, i), v as f64);
        }
    }
    verify(&spec, &inputs, &|idx| {
        let (b, i, j) = (idx[0], idx[1], idx[2]);
        (0..8)
            .map(|k| {
                input(&spec, &inputs, 0, &[b, i, k])
                    * input(&spec, &inputs, 2, &[b, i, k / 4])
                    * input(&spec, &inputs, 1, &[b, j, k])
                    * input(&spec, &inputs, 3, &[b, 0, k / 2])
            })
            .sum::<f64>()
    });
}
