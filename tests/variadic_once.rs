//! A multi-output fusion whose outputs are the elements `#0`, `#1`, .. of one variadic
//! reduction (a `reduce-window` pooling that keeps the position of its maximum, and an
//! argmax `reduce`, each at the root or read through `get-tuple-element`s of a tuple root)
//! folds the reduction once per element: the CUDA and the C kernels write its loop once and
//! store every accumulator to its output. Both kernels run on the CPU (simplified and
//! naive) and agree with the reference on every element of every output; the C kernels
//! compile under `-Wall -Werror` (the outputs' own functions, no longer called, are gone).

use ixmap::gpu::cuda_cpu::{check_c, check_inputs};
use ixmap::gpu::emit;
use ixmap::gpu::launch::{self, LaunchConfig};
use ixmap::gpu::reference::make_inputs;
use ixmap::gpu::spec::{Body, KernelSpec};
#[path = "common/hlo_specs.rs"]
#[allow(dead_code)]
mod hlo_specs;
use hlo_specs::spec as spec_of;

fn has_cxx() -> bool {
    std::process::Command::new(ixmap::gpu::cuda_cpu::compiler())
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Argmax of a value and two positions: the larger value, the smaller first position on
/// ties (then the smaller second one).
const ARGMAX3: &str =
    "argmax3 {\n  av = f32[] parameter(0)\n  ai = s32[] parameter(1)\n  aj = s32[] parameter(2)\n\
  bv = f32[] parameter(3)\n  bi = s32[] parameter(4)\n  bj = s32[] parameter(5)\n\
  gt = pred[] compare(av, bv), direction=GT\n  eq = pred[] compare(av, bv), direction=EQ\n\
  lt = pred[] compare(ai, bi), direction=LT\n  tie = pred[] and(eq, lt)\n\
  pick = pred[] or(gt, tie)\n  v = f32[] select(pick, av, bv)\n\
  i = s32[] select(pick, ai, bi)\n  j = s32[] select(pick, aj, bj)\n\
  ROOT t = (f32[], s32[], s32[]) tuple(v, i, j)\n}\n";

/// The functions the outputs are computed by: each a variadic reduction (`#k`).
fn tuple_outputs(spec: &KernelSpec) -> usize {
    let mut funcs = vec![0];
    funcs.extend(spec.more_outputs.iter().map(|o| o.func));
    funcs
        .iter()
        .filter(|&&f| matches!(spec.functions[f].body, Body::ReduceTuple { .. }))
        .count()
}

/// The kernels of `spec` (3 outputs of one variadic reduction): each writes the
/// reduction's loop (`for (.. s0 = `) once, in the entry point, and both run correctly.
fn check(spec: &KernelSpec, loops: usize) {
    assert_eq!(spec.more_outputs.len(), 2, "{}", spec.name);
    assert_eq!(tuple_outputs(spec), 3, "{}", spec.name);
    let launch = launch::choose(spec, LaunchConfig::default(), None)
        .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
    for naive in [false, true] {
        let cuda = emit::cuda::emit(spec, &launch, naive)
            .unwrap_or_else(|e| panic!("{} CUDA: {e}", spec.name))
            .source;
        assert_eq!(
            cuda.matches(" s0 <= ").count(),
            loops,
            "{} naive={naive}: the reduction's loop once in\n{cuda}",
            spec.name
        );
        assert!(
            cuda.contains("= acc1_1;") && cuda.contains("= acc1_2;"),
            "{} naive={naive}: outputs 1 and 2 store the accumulators in\n{cuda}",
            spec.name
        );
        let c = emit::cpu::emit(spec, naive)
            .unwrap_or_else(|e| panic!("{} C: {e}", spec.name))
            .source;
        let entry = &c[c.find("_body(").expect("the C kernel's body")..];
        assert_eq!(
            entry.matches(" s0 <= ").count(),
            loops,
            "{} naive={naive}: the C kernel's loop once in\n{c}",
            spec.name
        );
    }
    if !has_cxx() {
        assert!(std::env::var("CI").is_err(), "CI and no C++ compiler");
        eprintln!("*** SKIPPED running the kernels: no C++ compiler");
        return;
    }
    // The C kernels compile without a warning (no helper left uncalled).
    let dir = std::env::temp_dir().join(format!(
        "ixmap-variadic-once-{}-{}",
        std::process::id(),
        spec.name
    ));
    std::fs::create_dir_all(&dir).unwrap();
    for naive in [false, true] {
        let c = dir.join(format!("{}_{naive}.c", spec.name));
        std::fs::write(&c, emit::cpu::emit(spec, naive).unwrap().source).unwrap();
        let out = std::process::Command::new(ixmap::gpu::bench::cpu::compiler())
            .args([
                "-std=c11", "-O1", "-fopenmp", "-Wall", "-Werror", "-c", "-o",
            ])
            .arg(dir.join(format!("{}_{naive}.o", spec.name)))
            .arg(&c)
            .output()
            .expect("run the C compiler");
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{} naive={naive}: {}",
            spec.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    let inputs = make_inputs(spec).unwrap();
    for naive in [false, true] {
        check_c(spec, naive, Some(&inputs))
            .unwrap_or_else(|e| panic!("{} C naive={naive}: {e}", spec.name));
        check_inputs(spec, &launch, naive, false, Some(&inputs))
            .unwrap_or_else(|e| panic!("{} CUDA on the CPU naive={naive}: {e}", spec.name));
    }
}

/// The lines of a 2×2 max pooling of `f32[n,h,w,c]` that keeps the row and the column of
/// the maximum (its parameter, iotas and initial values), its `reduce-window` and its
/// tuple shape.
fn pooling([n, h, w, c]: [i64; 4]) -> (String, &'static str, String) {
    let d = format!("{n},{h},{w},{c}");
    let body = format!(
        "  p0 = f32[{d}] parameter(0)\n  r = s32[{d}] iota(), iota_dimension=1\n\
         c = s32[{d}] iota(), iota_dimension=2\n  ninf = f32[] constant(-inf)\n  m1 = s32[] constant(-1)\n"
    );
    let rw = "reduce-window(p0, r, c, ninf, m1, m1), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=argmax3";
    let o = format!("{n},{},{},{c}", h / 2, w / 2);
    (body, rw, format!("(f32[{o}], s32[{o}], s32[{o}])"))
}

/// Max pooling 2×2 of `f32[4,8,8,4]` keeping the row and the column of the maximum: one
/// `reduce-window` of three operands, its three outputs the fusion's (at the root, and
/// through a tuple of `get-tuple-element`s).
#[test]
fn a_variadic_reduce_window_is_folded_once_for_all_its_outputs() {
    let (body, rw, shape) = pooling([4, 8, 8, 4]);
    let spec = spec_of(
        &format!("{ARGMAX3}pool {{\n{body}  ROOT w = {shape} {rw}\n}}\n"),
        "pool",
    );
    check(&spec, 1);
    let spec = spec_of(
        &format!(
            "{ARGMAX3}poolt {{\n{body}  w = {shape} {rw}\n\
             a = f32[4,4,4,4] get-tuple-element(w), index=0\n\
             b = s32[4,4,4,4] get-tuple-element(w), index=1\n\
             e = s32[4,4,4,4] get-tuple-element(w), index=2\n\
             ROOT t = (f32[4,4,4,4], s32[4,4,4,4], s32[4,4,4,4]) tuple(a, b, e)\n}}\n"
        ),
        "poolt",
    );
    check(&spec, 1);
}

/// Argmax over the last dimension of `f32[6,9]`, with the position and its square: one
/// variadic `reduce` of three operands, its three outputs the fusion's.
#[test]
fn a_variadic_reduce_is_folded_once_for_all_its_outputs() {
    let body = "  p0 = f32[6,9] parameter(0)\n  io = s32[6,9] iota(), iota_dimension=1\n\
         sq = s32[6,9] multiply(io, io)\n  ninf = f32[] constant(-inf)\n  z = s32[] constant(0)\n";
    let red = "reduce(p0, io, sq, ninf, z, z), dimensions={1}, to_apply=argmax3";
    let shape = "(f32[6], s32[6], s32[6])";
    let spec = spec_of(
        &format!("{ARGMAX3}am {{\n{body}  ROOT r = {shape} {red}\n}}\n"),
        "am",
    );
    check(&spec, 1);
    let spec = spec_of(
        &format!(
            "{ARGMAX3}amt {{\n{body}  r = {shape} {red}\n\
             a = f32[6] get-tuple-element(r), index=0\n\
             b = s32[6] get-tuple-element(r), index=1\n\
             e = s32[6] get-tuple-element(r), index=2\n\
             ROOT t = {shape} tuple(a, b, e)\n}}\n"
        ),
        "amt",
    );
    check(&spec, 1);
}

/// The same pooling at the size of the H100 dumps' `pool_grad` (`f32[16,64,64,32]`, 524288
/// outputs: XLA's default launch unrolls by 4): every output, the s32 positions as well as
/// the f32 maximum, is written as one 128-bit store a thread (`int4`, `float4`), and the
/// kernels still agree with the reference on every element.
#[test]
fn every_output_of_an_unrolled_variadic_reduce_window_is_one_vector_store() {
    let (body, rw, shape) = pooling([16, 64, 64, 32]);
    let spec = spec_of(
        &format!("{ARGMAX3}bigpool {{\n{body}  ROOT w = {shape} {rw}\n}}\n"),
        "bigpool",
    );
    let (launch, _) =
        launch::choose_default(&spec, None, launch::DeviceLimits::H100).expect("launch");
    assert_eq!(launch.config.vector, 4, "XLA's default launch unrolls by 4");
    let cuda = emit::cuda::emit(&spec, &launch, false)
        .expect("emits")
        .source;
    for store in [
        "*reinterpret_cast<float4 *>(out + ",
        "*reinterpret_cast<int4 *>(out1 + ",
        "*reinterpret_cast<int4 *>(out2 + ",
    ] {
        assert!(cuda.contains(store), "`{store}` in\n{cuda}");
    }
    let inputs = make_inputs(&spec).unwrap();
    check_inputs(&spec, &launch, false, false, Some(&inputs))
        .unwrap_or_else(|e| panic!("CUDA on the CPU: {e}"));
}

/// Whether the CUDA kernel of `spec` at `vector` elements a thread reads input 0 only in
/// 128-bit vectors (no element-at-a-time `p0[`), after checking that it runs correctly on
/// the CPU (32- and 64-bit indices) for the simplified and the naive kernel.
fn vector_window_reads(spec: &KernelSpec, vector: i64) -> (bool, String) {
    let config = LaunchConfig {
        vector,
        ..LaunchConfig::default()
    };
    let launch =
        launch::choose(spec, config, None).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
    assert_eq!(launch.config.vector, vector, "{}", spec.name);
    let inputs = make_inputs(spec).unwrap();
    for naive in [false, true] {
        for wide in [false, true] {
            check_inputs(spec, &launch, naive, wide, Some(&inputs)).unwrap_or_else(|e| {
                panic!(
                    "{} CUDA on the CPU naive={naive} wide={wide}: {e}",
                    spec.name
                )
            });
        }
    }
    let cuda = emit::cuda::emit(spec, &launch, false)
        .expect("emits")
        .source;
    let vt = if spec.inputs[0].elem.bytes() == 8 {
        "double2"
    } else {
        "float4"
    };
    let vectors =
        cuda.contains(&format!("*reinterpret_cast<const {vt} *>(p0 + ")) && !cuda.contains("p0[");
    (vectors, cuda)
}

/// The fusion `name`: a `reduce-window` of a parameter of type `ty` and shape `shape` to
/// `out` from `init` by `add`, or by `maximum` where `init` is `-inf`, over `window`.
fn plain_window(
    name: &str,
    ty: &str,
    shape: &str,
    out: &str,
    init: &str,
    window: &str,
) -> KernelSpec {
    let (op, root) = if init == "-inf" {
        ("maximum", "max")
    } else {
        ("add", "sum")
    };
    spec_of(
        &format!(
            "red {{\n  a = {ty}[] parameter(0)\n  b = {ty}[] parameter(1)\n  ROOT {root} = {ty}[] {op}(a, b)\n}}\n\
             {name} {{\n  p0 = {ty}[{shape}] parameter(0)\n  z = {ty}[] constant({init})\n\
             ROOT r = {ty}[{out}] reduce-window(p0, z), window={{{window}}}, to_apply=red\n}}\n"
        ),
        name,
    )
}

/// A window reduction at the root of an unrolled loop kernel folds its window with the
/// window loop outside the loop over the thread's elements: each window position's
/// elements come in one 128-bit load, in the order the element-at-a-time loop folds them.
/// A variadic pooling (its three outputs from one fold), a plain sum pooling, a sum over a
/// window padded in its spatial dimensions (each vector loaded where it lies inside the
/// operand, the padding's value elsewhere),
/// f64 at two elements a thread; where the window moves along the vector's dimension
/// (a window of 3 along the last dimension, padded) the elements are not one vector and
/// the kernel reads them one at a time. Every kernel agrees with the reference.
#[test]
fn an_unrolled_window_reduction_reads_each_window_position_as_one_vector() {
    let (body, rw, shape) = pooling([2, 8, 8, 16]);
    let spec = spec_of(
        &format!("{ARGMAX3}vpool {{\n{body}  ROOT w = {shape} {rw}\n}}\n"),
        "vpool",
    );
    let (vectors, cuda) = vector_window_reads(&spec, 4);
    assert!(vectors, "one float4 load a window position in\n{cuda}");
    assert_eq!(
        cuda.matches(" s0 <= ").count(),
        1,
        "the window's loop once in\n{cuda}"
    );
    for store in ["(out + ", "(out1 + ", "(out2 + "] {
        assert!(cuda.contains(store), "a vector store `{store}` in\n{cuda}");
    }
    // The same fold's outputs through a tuple in another order: each output stores its
    // own accumulator.
    let spec = spec_of(
        &format!(
            "{ARGMAX3}vpoolr {{\n{body}  w = {shape} {rw}\n\
             a = f32[2,4,4,16] get-tuple-element(w), index=0\n\
             b = s32[2,4,4,16] get-tuple-element(w), index=1\n\
             e = s32[2,4,4,16] get-tuple-element(w), index=2\n\
             ROOT t = (s32[2,4,4,16], f32[2,4,4,16], s32[2,4,4,16]) tuple(e, a, b)\n}}\n"
        ),
        "vpoolr",
    );
    let (vectors, cuda) = vector_window_reads(&spec, 4);
    assert!(vectors, "one float4 load a window position in\n{cuda}");
    let vectors_of = |name: &str, shape: &str, out: &str, init: &str, window: &str| {
        vector_window_reads(&plain_window(name, "f32", shape, out, init, window), 4)
    };
    let (vectors, cuda) = vectors_of(
        "sum",
        "2,8,8,16",
        "2,4,4,16",
        "0",
        "size=1x2x2x1 stride=1x2x2x1",
    );
    assert!(vectors, "one float4 load a window position in\n{cuda}");
    let (vectors, cuda) = vectors_of(
        "padded",
        "2,6,5,8",
        "2,6,5,8",
        "0",
        "size=1x3x3x1 pad=0_0x1_1x1_1x0_0",
    );
    assert!(vectors, "one float4 load a window position in\n{cuda}");
    assert!(
        cuda.contains("where they lie inside it"),
        "the padding's positions skip the load in\n{cuda}"
    );
    // ResNet's max pooling: 3×3, stride 2, padded by 1 with -inf.
    let (vectors, cuda) = vectors_of(
        "maxpool",
        "2,9,9,8",
        "2,5,5,8",
        "-inf",
        "size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0",
    );
    assert!(vectors, "one float4 load a window position in\n{cuda}");
    // Dilated windows and a dilated base: positions between the base's elements skipped.
    let (vectors, cuda) = vectors_of(
        "dilated",
        "2,5,6,8",
        "2,9,9,8",
        "0",
        "size=1x2x2x1 pad=0_0x1_0x0_0x0_0 lhs_dilate=1x2x2x1 rhs_dilate=1x1x2x1",
    );
    assert!(vectors, "one float4 load a window position in\n{cuda}");
    // A window of 64 positions: its loop is not unrolled (the elements' loop still is).
    let (vectors, cuda) = vectors_of(
        "wide",
        "2,16,16,8",
        "2,2,2,8",
        "0",
        "size=1x8x8x1 stride=1x8x8x1",
    );
    assert!(vectors, "one float4 load a window position in\n{cuda}");
    assert_eq!(
        cuda.matches("#pragma unroll").count(),
        3,
        "only the elements' loops unrolled in\n{cuda}"
    );
    let sumd = plain_window(
        "sumd",
        "f64",
        "3,4,6,10",
        "3,2,3,10",
        "0",
        "size=1x2x2x1 stride=1x2x2x1",
    );
    let (vectors, cuda) = vector_window_reads(&sumd, 2);
    assert!(vectors, "one double2 load a window position in\n{cuda}");
    let (vectors, cuda) = vectors_of(
        "along",
        "4,4,4,16",
        "4,4,4,16",
        "0",
        "size=1x1x1x3 pad=0_0x0_0x0_0x1_1",
    );
    assert!(
        !vectors,
        "a window along the vector is read an element at a time in\n{cuda}"
    );
}
