//! Every elementwise op of XLA's operation semantics (issue 27, item 3), on every element
//! type it accepts, in every emitter: one fusion holds a one-op output for each (op, type)
//! pair — about three hundred, a tuple root — over edge-case inputs (NaN, ±inf, ±0, the
//! smallest subnormal and the largest finite value; the most negative integer, -1, every
//! shift count from 0 to the width + 1, ...), each operand pair met once. The fusion is
//!
//! - emitted as C (the CPU emitter) and run,
//! - emitted as CUDA and run on the CPU (`src/gpu/cuda_on_cpu.h`),
//! - compiled by NVRTC and ptxas with no warning (when NVRTC is found; under `CI=true` it
//!   must be),
//!
//! and every element of every output is checked against the reference interpreter: bit for
//! bit (a zero's sign included; any NaN matches any NaN), but for `erf`, which the reference
//! computes itself (Rust has no `erf`) and libm need not round correctly: there one unit in
//! the last place of f32, f16 and bf16, and 4 of f64.
//!
//! And the reference itself, against values derived by hand from the operations' definitions.

#[path = "common/cpu_verify.rs"]
#[allow(dead_code)]
mod verify;

use ixmap::gpu::reference::{self, binary, half_bits, read_scalar, unary, Reference, Scalar};
use ixmap::gpu::spec::{BinOp, ElemType, KernelSpec, UnOp};
use ixmap::gpu::{cuda_cpu, emit, nvcc, sweep};

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

fn has_compiler(cmd: &str) -> bool {
    std::process::Command::new(cmd)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Edge values of type `t`, each exact in it.
fn edges(t: ElemType) -> Vec<Scalar> {
    if t == ElemType::Pred {
        return vec![Scalar::I(0), Scalar::I(1)];
    }
    if t.is_float() {
        let (tiny, max, min_normal) = match t {
            ElemType::F16 => (2f64.powi(-24), 65504.0, 2f64.powi(-14)),
            ElemType::BF16 => (2f64.powi(-133), 3.3895313892515355e38, 2f64.powi(-126)),
            ElemType::F32 => (2f64.powi(-149), f32::MAX as f64, 2f64.powi(-126)),
            _ => (f64::from_bits(1), f64::MAX, f64::MIN_POSITIVE),
        };
        let mut v = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            -0.5,
            1.5,
            2.5,
            -2.5,
            3.0,
            -3.0,
            0.1,
            -7.25,
            0.785,
            20.0,
            -20.0,
            100.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            tiny,
            -tiny,
            max,
            -max,
            min_normal,
            1e-3,
            4.0,
            6.5,
            -0.3,
        ];
        // Where exp and friends overflow in f32 and f64.
        v.extend([88.75, -104.0, 710.0]);
        return v.into_iter().map(|x| Scalar::from_f64(t, x)).collect();
    }
    let bits = t.bits() as i128;
    let (lo, hi) = if t.is_signed_int() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    // Every shift count from 0 to the width + 1, the ends of the range and their
    // neighbours, -1 and -2 (wrapped on unsigned types), and two bit patterns.
    let mut v: Vec<i128> = (0..=bits + 1).collect();
    v.extend([
        lo,
        lo + 1,
        hi,
        hi - 1,
        -1,
        -2,
        0x5a5a_5a5a_5a5a_5a5a,
        123_456_789,
    ]);
    let mut out: Vec<Scalar> = v
        .into_iter()
        .map(|x| Scalar::I(reference::wrap(t, x)))
        .collect();
    out.dedup();
    out
}

/// The 32-bit and 64-bit patterns' neighbours are wrapped; duplicates are harmless.
fn bytes_of(t: ElemType, v: Scalar) -> Vec<u8> {
    match (t, v) {
        (ElemType::F32, Scalar::F(x)) => (x as f32).to_le_bytes().to_vec(),
        (ElemType::F64, Scalar::F(x)) => x.to_le_bytes().to_vec(),
        (ElemType::F16 | ElemType::BF16, Scalar::F(x)) => half_bits(t, x).to_le_bytes().to_vec(),
        (_, Scalar::I(i)) => i.to_le_bytes()[..t.bytes() as usize].to_vec(),
        (_, Scalar::F(x)) => panic!("{x} is not a {}", t.hlo_name()),
    }
}

/// One output of the fusion: its HLO line's op, result type and operand types.
struct Case {
    op: String,
    t: ElemType,
    result: ElemType,
    binary: bool,
    /// Units in the last place the emitted code may differ by from the reference.
    ulps: u64,
}

/// What an op may differ by: nothing for the correctly rounded ones (arithmetic, sqrt,
/// rsqrt as 1/sqrt, the roundings, sign, the integer and bit ops); one unit in the last
/// place for a libm function on a float type (libm need not round correctly, and Rust's
/// own functions, the reference's, need not be the system's the kernels call; measured: 1
/// for cbrt in f64), two for erf in f64 (the reference's own erf, a few ulps from the true
/// value; measured: 2). A 16-bit float is computed in f32: an f32 difference of one unit can
/// round it one unit the other way.
fn libm_ulps(op: &str, t: ElemType) -> u64 {
    let libm = [
        "exponential",
        "log",
        "tanh",
        "cbrt",
        "exponential-minus-one",
        "log-plus-one",
        "logistic",
        "sine",
        "cosine",
        "tan",
        "erf",
        "power",
        "atan2",
    ];
    match (op, t) {
        _ if !t.is_float() || !libm.contains(&op) => 0,
        ("erf", ElemType::F64) => 2,
        _ => 1,
    }
}

/// Whether HLO has `op` on `t`: the elementwise op table (`hlo::ops::elementwise`), which
/// refuses an instruction such as `negate` of pred where it is defined.
fn hlo_takes(op: &str, t: ElemType) -> bool {
    use ixmap::hlo::ops::elementwise::{class_bit, row};
    row(op).is_none_or(|r| r.takes & class_bit(t.hlo_name()) != 0)
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for t in ElemType::ALL {
        for op in UnOp::SIMPLE {
            if op.accepts(t) {
                v.push(Case {
                    op: op.hlo_name().into(),
                    t,
                    result: op.result_elem(t),
                    binary: false,
                    ulps: libm_ulps(op.hlo_name(), t),
                });
            }
        }
        for to in ElemType::ALL {
            let op = UnOp::BitcastConvert(to);
            if to != t && op.accepts(t) {
                v.push(Case {
                    op: op.hlo_name().into(),
                    t,
                    result: to,
                    binary: false,
                    ulps: 0,
                });
            }
        }
        for op in BinOp::ALL {
            if op.accepts(t) {
                v.push(Case {
                    op: op.hlo_name().into(),
                    t,
                    result: t,
                    binary: true,
                    ulps: libm_ulps(op.hlo_name(), t),
                });
            }
        }
        // clamp(lo, x, hi) with the edges as x and y, and a fixed lower bound.
        if t != ElemType::Pred {
            v.push(Case {
                op: "clamp".into(),
                t,
                result: t,
                binary: true,
                ulps: 0,
            });
        }
    }
    // the kernels' type rules are HLO's op table: an op the kernels accept, HLO takes
    for c in &v {
        assert!(hlo_takes(&c.op, c.t), "{} on {}", c.op, c.t.hlo_name());
    }
    v
}

/// The ops HLO refuses on a type, the kernels refuse too, saying what the op takes.
#[test]
fn ops_refused_on_a_type_say_what_they_take() {
    use ixmap::gpu::spec::ElemType::*;
    assert!(!UnOp::Neg.accepts(Pred) && !UnOp::Abs.accepts(Pred) && !UnOp::Sign.accepts(Pred));
    assert!(!BinOp::Sub.accepts(Pred) && !BinOp::Div.accepts(Pred) && !BinOp::Rem.accepts(Pred));
    assert!(BinOp::Add.accepts(Pred) && BinOp::Max.accepts(Pred) && UnOp::Not.accepts(Pred));
    assert_eq!(
        UnOp::Neg.check(Pred).unwrap_err(),
        "negate is not defined on pred (it takes integers, floats and complex numbers)"
    );
    assert_eq!(
        BinOp::Shl.check(F32).unwrap_err(),
        "shift-left is not defined on f32 (it takes integers)"
    );
    for t in ElemType::ALL {
        for op in UnOp::SIMPLE {
            assert_eq!(
                op.accepts(t),
                hlo_takes(op.hlo_name(), t),
                "{}",
                op.hlo_name()
            );
        }
        for op in BinOp::ALL {
            assert_eq!(
                op.accepts(t),
                hlo_takes(op.hlo_name(), t),
                "{}",
                op.hlo_name()
            );
        }
    }
}

/// The fusion, its inputs (x and y per type: every pair of edge values once) and cases.
fn fusion() -> (KernelSpec, Vec<Vec<u8>>, Vec<Case>) {
    let cases = cases();
    let n = ElemType::ALL
        .iter()
        .map(|&t| edges(t).len().pow(2))
        .max()
        .unwrap_or(1);
    let mut text = String::from("ew {\n");
    let mut inputs = Vec::new();
    for (k, t) in ElemType::ALL.into_iter().enumerate() {
        let tn = t.hlo_name();
        text += &format!("  x_{tn} = {tn}[{n}] parameter({})\n", 2 * k);
        text += &format!("  y_{tn} = {tn}[{n}] parameter({})\n", 2 * k + 1);
        let e = edges(t);
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for i in 0..n {
            x.extend(bytes_of(t, e[(i / e.len()) % e.len()]));
            y.extend(bytes_of(t, e[i % e.len()]));
        }
        inputs.push(x);
        inputs.push(y);
        if t != ElemType::Pred {
            // a lower bound each type holds (an unsigned one cannot be -2)
            let lo = if t.is_unsigned_int() { 2 } else { -2 };
            text += &format!("  lo_{tn} = {tn}[] constant({lo})\n");
        }
    }
    let mut outs = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let (tn, rn) = (c.t.hlo_name(), c.result.hlo_name());
        let args = match (c.op.as_str(), c.binary) {
            ("clamp", _) => format!("lo_{tn}, x_{tn}, y_{tn}"),
            (_, true) => format!("x_{tn}, y_{tn}"),
            (_, false) => format!("x_{tn}"),
        };
        text += &format!("  o{i} = {rn}[{n}] {}({args})\n", c.op);
        outs.push(format!("o{i}"));
    }
    let shapes: Vec<String> = cases
        .iter()
        .map(|c| format!("{}[{n}]", c.result.hlo_name()))
        .collect();
    text += &format!(
        "  ROOT t = ({}) tuple({})\n}}\n",
        shapes.join(", "),
        outs.join(", ")
    );
    let mut s = ixmap::session::Session::new();
    s.execute(&text);
    let spec = sweep::spec_for(&s.hlo, "ew")
        .expect("ew is defined")
        .unwrap_or_else(|e| panic!("ew: {e}"));
    assert_eq!(spec.outputs().len(), cases.len());
    (spec, inputs, cases)
}

/// `bytes` in a 16-byte aligned buffer.
fn aligned(bytes: &[u8]) -> Vec<u128> {
    let mut v = vec![0u128; bytes.len().div_ceil(16)];
    for (i, b) in bytes.iter().enumerate() {
        v[i / 16] |= (*b as u128) << (8 * (i % 16));
    }
    v
}

fn unaligned(v: &[u128], len: usize) -> Vec<u8> {
    v.iter().flat_map(|w| w.to_le_bytes()).take(len).collect()
}

/// Runs `call` on the inputs and fresh outputs (every byte 0xff) and returns the outputs.
fn run(
    spec: &KernelSpec,
    inputs: &[Vec<u8>],
    call: &mut dyn FnMut(&mut Vec<*mut std::ffi::c_void>),
) -> Vec<Vec<u8>> {
    let sizes: Vec<usize> = spec
        .outputs()
        .iter()
        .map(|t| t.num_bytes().expect("small") as usize)
        .collect();
    let mut ins: Vec<Vec<u128>> = inputs.iter().map(|b| aligned(b)).collect();
    let mut outs: Vec<Vec<u128>> = sizes.iter().map(|&n| aligned(&vec![0xff; n])).collect();
    let mut ptrs: Vec<*mut std::ffi::c_void> = ins
        .iter_mut()
        .chain(outs.iter_mut())
        .map(|b| b.as_mut_ptr() as *mut std::ffi::c_void)
        .collect();
    call(&mut ptrs);
    outs.iter()
        .zip(&sizes)
        .map(|(b, &n)| unaligned(b, n))
        .collect()
}

/// A float's position on the line of its type's values (so that neighbours differ by 1).
fn ordinal(t: ElemType, x: f64) -> i64 {
    let (bits, sign) = match t {
        ElemType::F16 | ElemType::BF16 => (half_bits(t, x) as i64, 1i64 << 15),
        ElemType::F32 => ((x as f32).to_bits() as i64, 1i64 << 31),
        _ => (x.to_bits() as i64 & i64::MAX, 0),
    };
    if t == ElemType::F64 {
        return if x.is_sign_negative() { -bits } else { bits };
    }
    if bits & sign != 0 {
        -(bits & (sign - 1))
    } else {
        bits
    }
}

fn agrees(t: ElemType, got: Scalar, want: Scalar, ulps: u64) -> bool {
    match (got, want) {
        (Scalar::F(g), Scalar::F(w)) => {
            (g.is_nan() && w.is_nan())
                || (!g.is_nan()
                    && !w.is_nan()
                    && ordinal(t, g).abs_diff(ordinal(t, w)) <= ulps
                    && (ulps > 0 || g.is_sign_negative() == w.is_sign_negative()))
        }
        (g, w) => g == w,
    }
}

/// Checks every element of every output; returns the number of elements checked. Prints
/// the largest difference in units in the last place of each (op, type) that is not exact.
fn compare(what: &str, want: &[Vec<Scalar>], cases: &[Case], got: &[Vec<u8>]) -> usize {
    let mut bad = Vec::new();
    let mut checked = 0;
    for (k, c) in cases.iter().enumerate() {
        let t = c.result;
        let e = edges(c.t);
        let mut worst = 0u64;
        for (i, &w) in want[k].iter().enumerate() {
            let g = read_scalar(&got[k], t, i);
            checked += 1;
            if let (Scalar::F(a), Scalar::F(b)) = (g, w) {
                if !a.is_nan() && !b.is_nan() {
                    worst = worst.max(ordinal(t, a).abs_diff(ordinal(t, b)));
                }
            }
            if !agrees(t, g, w, c.ulps) && bad.len() < 40 {
                let x = e[(i / e.len()) % e.len()];
                let y = e[i % e.len()];
                bad.push(format!(
                    "{what}: {} on {} (x = {x}, y = {y}): got {g}, the reference says {w}",
                    c.op,
                    c.t.hlo_name()
                ));
            }
        }
        if worst > 0 {
            eprintln!(
                "{what}: {} on {}: within {worst} ulp (allowed {})",
                c.op,
                c.t.hlo_name(),
                c.ulps
            );
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    checked
}

#[test]
fn every_op_on_every_type_agrees_with_the_reference_in_c_and_in_cuda_on_the_cpu() {
    let (spec, inputs, cases) = fusion();
    let ops: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.op.as_str()).collect();
    eprintln!(
        "{} (op, type) cases of {} ops over {} elements each",
        cases.len(),
        ops.len(),
        spec.output.dims[0]
    );
    for op in UnOp::SIMPLE
        .iter()
        .map(|u| u.hlo_name())
        .chain(BinOp::ALL.iter().map(|b| b.hlo_name()))
    {
        assert!(ops.contains(op), "{op} is not tested");
    }
    assert!(ops.contains("bitcast-convert") && ops.contains("clamp"));
    let want = Reference::new(&spec, &inputs)
        .and_then(|r| r.outputs())
        .expect("the reference evaluates");
    // C, as the CPU emitter writes it.
    if has_compiler(&ixmap::gpu::bench::cpu::compiler()) {
        let e = emit::cpu::emit(&spec, false).expect("C emits");
        let k = ixmap::gpu::bench::cpu::compile(&e.source, &e.entry).expect("C compiles");
        // SAFETY: the CPU entry takes the inputs then the outputs, as `run` passes them.
        let got = run(&spec, &inputs, &mut |args| unsafe { k.call_args(args) });
        let n = compare("C", &want, &cases, &got);
        eprintln!("C: {n} elements agree");
    } else {
        assert!(!in_ci(), "CI and no C compiler");
    }
    // CUDA, run on the CPU.
    let (_, launch) = sweep::launches(&spec).into_iter().next().expect("a launch");
    let launch = launch.expect("the launch");
    let cuda = emit::cuda::emit(&spec, &launch, false).expect("CUDA emits");
    if has_compiler(&cuda_cpu::compiler()) {
        let got = run_cuda_on_cpu(&spec, &launch, &cuda.source, &cuda.entry, &inputs);
        let n = compare("CUDA on the CPU", &want, &cases, &got);
        eprintln!("CUDA on the CPU: {n} elements agree");
    } else {
        assert!(!in_ci(), "CI and no C++ compiler");
    }
    // NVRTC and ptxas: no warning.
    match (nvcc::Nvrtc::load(), nvcc::find_ptxas()) {
        (Ok(nvrtc), Some(ptxas)) => {
            let c = nvrtc
                .compile(&cuda.source, "ew.cu", &["--gpu-architecture=compute_90"])
                .expect("NVRTC runs");
            assert!(c.log.is_empty(), "NVRTC: {}", c.log);
            let ptx = c.ptx.expect("NVRTC compiles");
            let a = nvcc::ptxas(&ptxas, &ptx, "sm_90", &std::env::temp_dir()).expect("ptxas runs");
            assert!(
                a.ok && a.diagnostics.is_empty(),
                "ptxas: {:?}",
                a.diagnostics
            );
            eprintln!("NVRTC + ptxas sm_90: no warning");
        }
        (n, p) => {
            assert!(!in_ci(), "CI and no NVRTC/ptxas");
            eprintln!(
                "*** SKIPPED NVRTC: {}",
                n.err()
                    .unwrap_or_else(|| format!("ptxas found: {}", p.is_some()))
            );
        }
    }
}

/// The CUDA source compiled by the host C++ compiler with `cuda_on_cpu.h`, run over the
/// launch's grid; the outputs.
fn run_cuda_on_cpu(
    spec: &KernelSpec,
    launch: &ixmap::gpu::launch::Launch,
    source: &str,
    entry: &str,
    inputs: &[Vec<u8>],
) -> Vec<Vec<u8>> {
    let tu = cuda_cpu::translation_unit(spec, launch, source, entry);
    let dir = std::env::temp_dir().join(format!("ixmap-elementwise-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let lib = cuda_cpu::load_unit(&dir, &tu, "-O1").expect("the C++ compiler builds the unit");
    // SAFETY: the library was just compiled from the header and the emitted kernel; it
    // exports `ix_launch(void **)`, which takes the inputs then the outputs.
    let got = unsafe {
        let f = *lib
            .get::<unsafe extern "C" fn(*mut *mut std::ffi::c_void)>(b"ix_launch")
            .expect("ix_launch");
        run(spec, inputs, &mut |args| f(args.as_mut_ptr()))
    };
    let _ = std::fs::remove_dir_all(&dir);
    got
}

// ---------------------------------------------------------------------------------------
// The reference against values derived by hand.

fn f(x: f64) -> Scalar {
    Scalar::F(x)
}
fn i(x: i64) -> Scalar {
    Scalar::I(x)
}
fn un(op: UnOp, t: ElemType, x: Scalar) -> Scalar {
    unary(op, t, x).unwrap_or_else(|e| panic!("{op:?} on {t:?}: {e}"))
}
fn bin(op: BinOp, t: ElemType, x: Scalar, y: Scalar) -> Scalar {
    binary(op, t, x, y).unwrap_or_else(|e| panic!("{op:?} on {t:?}: {e}"))
}
fn is_nan(s: Scalar) -> bool {
    matches!(s, Scalar::F(x) if x.is_nan())
}
fn bits(s: Scalar) -> u64 {
    match s {
        Scalar::F(x) => x.to_bits(),
        Scalar::I(i) => i as u64,
    }
}

#[test]
fn integer_ops_wrap_and_shift_as_xla_defines() {
    use ElemType::*;
    // abs and negate of the most negative value are itself; sign is -1, 0, 1.
    assert_eq!(un(UnOp::Abs, S8, i(-128)), i(-128));
    assert_eq!(un(UnOp::Neg, S32, i(i32::MIN as i64)), i(i32::MIN as i64));
    assert_eq!(un(UnOp::Sign, S16, i(-5)), i(-1));
    assert_eq!(un(UnOp::Sign, S16, i(0)), i(0));
    assert_eq!(un(UnOp::Sign, U8, i(200)), i(1));
    // not: bitwise on integers (u8 0x0f -> 0xf0), logical on pred.
    assert_eq!(un(UnOp::Not, U8, i(0x0f)), i(0xf0));
    assert_eq!(un(UnOp::Not, S32, i(0)), i(-1));
    assert_eq!(un(UnOp::Not, Pred, i(1)), i(0));
    assert_eq!(un(UnOp::Not, Pred, i(0)), i(1));
    // popcnt and clz count the bits of the type's own width.
    assert_eq!(un(UnOp::Popcnt, S8, i(-1)), i(8));
    assert_eq!(un(UnOp::Popcnt, U64, i(-1)), i(64));
    assert_eq!(un(UnOp::Popcnt, S32, i(0x5a)), i(4));
    assert_eq!(un(UnOp::Clz, U8, i(0)), i(8));
    assert_eq!(un(UnOp::Clz, S64, i(0)), i(64));
    assert_eq!(un(UnOp::Clz, S16, i(1)), i(15));
    assert_eq!(un(UnOp::Clz, S32, i(-1)), i(0));
    assert_eq!(un(UnOp::Clz, U32, i(0x0001_0000)), i(15));
    // Shifts: a count of the width or more (or negative: read as unsigned) gives 0, or the
    // sign everywhere for the arithmetic right shift (on unsigned types too).
    assert_eq!(bin(BinOp::Shl, S8, i(1), i(7)), i(-128));
    assert_eq!(bin(BinOp::Shl, S8, i(1), i(8)), i(0));
    assert_eq!(bin(BinOp::Shl, U32, i(3), i(31)), i(0x8000_0000));
    assert_eq!(bin(BinOp::Shl, S32, i(1), i(-1)), i(0));
    assert_eq!(bin(BinOp::ShrL, S8, i(-128), i(1)), i(64));
    assert_eq!(bin(BinOp::ShrL, S8, i(-1), i(8)), i(0));
    assert_eq!(bin(BinOp::ShrL, U64, i(-1), i(63)), i(1));
    assert_eq!(bin(BinOp::ShrA, S8, i(-128), i(1)), i(-64));
    assert_eq!(bin(BinOp::ShrA, S8, i(-128), i(9)), i(-1));
    assert_eq!(bin(BinOp::ShrA, S16, i(100), i(200)), i(0));
    assert_eq!(bin(BinOp::ShrA, U8, i(0x80), i(1)), i(0xc0));
    assert_eq!(bin(BinOp::ShrA, U8, i(0x80), i(8)), i(0xff));
    // and, or, xor: bitwise; logical on pred.
    assert_eq!(bin(BinOp::And, U8, i(0xf0), i(0x3c)), i(0x30));
    assert_eq!(bin(BinOp::Or, S8, i(-128), i(1)), i(-127));
    assert_eq!(bin(BinOp::Xor, S64, i(-1), i(1)), i(-2));
    assert_eq!(bin(BinOp::Xor, Pred, i(1), i(1)), i(0));
    assert_eq!(bin(BinOp::Or, Pred, i(0), i(1)), i(1));
    // Power: exact then wrapped; a negative exponent truncates 1 / a^|b|.
    assert_eq!(bin(BinOp::Pow, S32, i(3), i(4)), i(81));
    assert_eq!(bin(BinOp::Pow, S8, i(2), i(7)), i(-128));
    assert_eq!(bin(BinOp::Pow, U8, i(3), i(5)), i(243));
    assert_eq!(bin(BinOp::Pow, U8, i(2), i(8)), i(0));
    assert_eq!(bin(BinOp::Pow, S64, i(2), i(64)), i(0));
    // 3^64 mod 2^64 = 0xc2f6_2d00_0000_0001 (3^64 = 3433683820292512484657849089281).
    let want = (3433683820292512484657849089281u128 % (1u128 << 64)) as u64 as i64;
    assert_eq!(bin(BinOp::Pow, S64, i(3), i(64)), i(want));
    assert_eq!(bin(BinOp::Pow, S32, i(0), i(0)), i(1));
    assert_eq!(bin(BinOp::Pow, S32, i(2), i(-1)), i(0));
    assert_eq!(bin(BinOp::Pow, S32, i(0), i(-3)), i(0));
    assert_eq!(bin(BinOp::Pow, S32, i(1), i(-3)), i(1));
    assert_eq!(bin(BinOp::Pow, S32, i(-1), i(-3)), i(-1));
    assert_eq!(bin(BinOp::Pow, S32, i(-1), i(-4)), i(1));
    assert_eq!(bin(BinOp::Pow, S8, i(-2), i(3)), i(-8));
    // Type rules.
    assert!(unary(UnOp::Sin, S32, i(1)).is_err());
    assert!(unary(UnOp::Popcnt, F32, f(1.0)).is_err());
    assert!(unary(UnOp::Popcnt, Pred, i(1)).is_err());
    assert!(binary(BinOp::Shl, Pred, i(1), i(0)).is_err());
    assert!(binary(BinOp::And, F32, f(1.0), f(1.0)).is_err());
    assert!(binary(BinOp::Atan2, S32, i(1), i(1)).is_err());
    assert!(unary(UnOp::BitcastConvert(S32), F64, f(1.0)).is_err());
}

#[test]
fn float_ops_keep_nan_infinities_and_signed_zeros_as_ieee_and_xla_define() {
    use ElemType::*;
    for t in [F16, BF16, F32, F64] {
        // sign: ±1, NaN for NaN, a zero as it is.
        assert_eq!(un(UnOp::Sign, t, f(-3.5)), f(-1.0));
        assert_eq!(un(UnOp::Sign, t, f(f64::INFINITY)), f(1.0));
        assert_eq!(bits(un(UnOp::Sign, t, f(-0.0))), (-0.0f64).to_bits());
        assert!(is_nan(un(UnOp::Sign, t, f(f64::NAN))));
        // Rounding: halves away from zero, or to even; a zero's sign kept.
        assert_eq!(un(UnOp::RoundAfz, t, f(2.5)), f(3.0));
        assert_eq!(un(UnOp::RoundAfz, t, f(-2.5)), f(-3.0));
        assert_eq!(un(UnOp::RoundEven, t, f(2.5)), f(2.0));
        assert_eq!(un(UnOp::RoundEven, t, f(3.5)), f(4.0));
        assert_eq!(un(UnOp::RoundEven, t, f(-0.5)), f(-0.0));
        assert_eq!(bits(un(UnOp::RoundEven, t, f(-0.5))), (-0.0f64).to_bits());
        assert_eq!(bits(un(UnOp::RoundAfz, t, f(-0.25))), (-0.0f64).to_bits());
        assert_eq!(un(UnOp::Floor, t, f(-1.5)), f(-2.0));
        assert_eq!(un(UnOp::Ceil, t, f(-1.5)), f(-1.0));
        assert_eq!(bits(un(UnOp::Ceil, t, f(-0.5))), (-0.0f64).to_bits());
        assert_eq!(
            un(UnOp::Floor, t, f(f64::NEG_INFINITY)),
            f(f64::NEG_INFINITY)
        );
        // is-finite: a pred.
        assert_eq!(un(UnOp::IsFinite, t, f(1.0)), i(1));
        assert_eq!(un(UnOp::IsFinite, t, f(f64::INFINITY)), i(0));
        assert_eq!(un(UnOp::IsFinite, t, f(f64::NAN)), i(0));
        // rsqrt: 1/sqrt; of 0 is inf, of a negative NaN; of 4 is 0.5.
        assert_eq!(un(UnOp::Rsqrt, t, f(4.0)), f(0.5));
        assert_eq!(un(UnOp::Rsqrt, t, f(0.0)), f(f64::INFINITY));
        assert_eq!(un(UnOp::Rsqrt, t, f(-0.0)), f(f64::NEG_INFINITY));
        assert!(is_nan(un(UnOp::Rsqrt, t, f(-1.0))));
        // cbrt of a negative is negative.
        assert_eq!(un(UnOp::Cbrt, t, f(-8.0)), f(-2.0));
        assert_eq!(un(UnOp::Cbrt, t, f(27.0)), f(3.0));
        // logistic: 1/2 at 0, 1 at +inf, 0 at -inf.
        assert_eq!(un(UnOp::Logistic, t, f(0.0)), f(0.5));
        assert_eq!(un(UnOp::Logistic, t, f(f64::INFINITY)), f(1.0));
        assert_eq!(un(UnOp::Logistic, t, f(f64::NEG_INFINITY)), f(0.0));
        // expm1 and log1p: exact at 0, -1 and -inf at the ends.
        assert_eq!(un(UnOp::Expm1, t, f(0.0)), f(0.0));
        assert_eq!(un(UnOp::Expm1, t, f(f64::NEG_INFINITY)), f(-1.0));
        assert_eq!(un(UnOp::Log1p, t, f(-1.0)), f(f64::NEG_INFINITY));
        assert!(is_nan(un(UnOp::Log1p, t, f(-2.0))));
        // sin, cos, tan at 0; NaN at infinity.
        assert_eq!(un(UnOp::Sin, t, f(0.0)), f(0.0));
        assert_eq!(un(UnOp::Cos, t, f(0.0)), f(1.0));
        assert_eq!(bits(un(UnOp::Tan, t, f(-0.0))), (-0.0f64).to_bits());
        assert!(is_nan(un(UnOp::Sin, t, f(f64::INFINITY))));
        // erf: odd, ±1 at the infinities.
        assert_eq!(un(UnOp::Erf, t, f(f64::INFINITY)), f(1.0));
        assert_eq!(un(UnOp::Erf, t, f(f64::NEG_INFINITY)), f(-1.0));
        assert_eq!(bits(un(UnOp::Erf, t, f(-0.0))), (-0.0f64).to_bits());
        // power: x^0 = 1 even for NaN; 1^y = 1 even for NaN; (-8)^(1/3) is NaN.
        assert_eq!(bin(BinOp::Pow, t, f(f64::NAN), f(0.0)), f(1.0));
        assert_eq!(bin(BinOp::Pow, t, f(1.0), f(f64::NAN)), f(1.0));
        assert_eq!(bin(BinOp::Pow, t, f(2.0), f(-2.0)), f(0.25));
        assert_eq!(bin(BinOp::Pow, t, f(-2.0), f(3.0)), f(-8.0));
        assert_eq!(bin(BinOp::Pow, t, f(0.0), f(-1.0)), f(f64::INFINITY));
        assert!(is_nan(bin(BinOp::Pow, t, f(-8.0), f(1.0 / 3.0))));
        // atan2(y, x): the quadrant from both signs.
        assert_eq!(bin(BinOp::Atan2, t, f(0.0), f(1.0)), f(0.0));
        assert_eq!(
            bits(bin(BinOp::Atan2, t, f(-0.0), f(1.0))),
            (-0.0f64).to_bits()
        );
        let pi = reference::round_float(t, std::f64::consts::PI);
        assert_eq!(bin(BinOp::Atan2, t, f(0.0), f(-1.0)), f(pi));
        assert_eq!(bin(BinOp::Atan2, t, f(-0.0), f(-1.0)), f(-pi));
        // remainder: the sign of the dividend.
        assert_eq!(bin(BinOp::Rem, t, f(-7.0), f(2.0)), f(-1.0));
        assert!(is_nan(bin(BinOp::Rem, t, f(1.0), f(0.0))));
        // max and min propagate NaN from either side.
        assert!(is_nan(bin(BinOp::Max, t, f(1.0), f(f64::NAN))));
        assert!(is_nan(bin(BinOp::Min, t, f(f64::NAN), f(1.0))));
    }
    // f16 rounds each result to its 11 bits: exp(1) = 2.71875 (2.718281... to 1/512).
    assert_eq!(un(UnOp::Exp, F16, f(1.0)), f(2.71875));
    // 16-bit types overflow to infinity: 2^16 is past f16's largest value.
    assert_eq!(bin(BinOp::Pow, F16, f(2.0), f(16.0)), f(f64::INFINITY));
    assert_eq!(bin(BinOp::Pow, BF16, f(2.0), f(16.0)), f(65536.0));
}

#[test]
fn erf_matches_its_values_to_the_last_bits() {
    // erf at 0.5, 1, 2, 3 as tables give it (0.52049987781304653768, 0.84270079294971486934,
    // 0.99532226501895273416, 0.99997790950300141456), near 0 its series' first two terms
    // 2/sqrt(pi) (x - x^3/3), and erf's oddness.
    let table = [
        (0.5, 0.520_499_877_813_046_5),
        (1.0, 0.842_700_792_949_714_9),
        (2.0, 0.995_322_265_018_952_7),
        (3.0, 0.999_977_909_503_001_4),
        (1e-5, 1.128_379_167_057_9e-5),
    ];
    for (x, want) in table {
        for s in [1.0, -1.0] {
            let got = reference::erf(s * x);
            let ulps = (got.to_bits() as i64 - (s * want).to_bits() as i64).abs();
            assert!(
                ulps <= 4,
                "erf({}) = {got}, want {} ({ulps} ulps)",
                s * x,
                s * want
            );
        }
    }
    assert_eq!(reference::erf(6.0), 1.0);
    assert_eq!(reference::erf(-40.0), -1.0);
    assert!(reference::erf(f64::NAN).is_nan());
}

#[test]
fn bitcast_convert_reinterprets_bits_of_the_same_width() {
    use ElemType::*;
    assert_eq!(un(UnOp::BitcastConvert(S32), F32, f(1.0)), i(0x3f80_0000));
    assert_eq!(un(UnOp::BitcastConvert(U32), F32, f(-0.0)), i(0x8000_0000));
    assert_eq!(
        un(UnOp::BitcastConvert(F32), S32, i(0x4049_0fdb)),
        f(std::f32::consts::PI as f64)
    );
    assert_eq!(
        un(UnOp::BitcastConvert(S64), F64, f(-2.0)),
        i(0xc000_0000_0000_0000u64 as i64)
    );
    assert_eq!(un(UnOp::BitcastConvert(U16), F16, f(1.0)), i(0x3c00));
    assert_eq!(un(UnOp::BitcastConvert(U16), BF16, f(1.0)), i(0x3f80));
    // 0xbc00 is f16's -1; 0xfc00 its -inf.
    assert_eq!(un(UnOp::BitcastConvert(F16), S16, i(-17408)), f(-1.0));
    assert_eq!(
        un(UnOp::BitcastConvert(F16), S16, i(-1024)),
        f(f64::NEG_INFINITY)
    );
    // bf16's 1.0 is 0x3f80: as f16, exponent 15 and fraction 0x380/0x400, 1.875.
    assert_eq!(un(UnOp::BitcastConvert(F16), BF16, f(1.0)), f(1.875));
    assert_eq!(un(UnOp::BitcastConvert(U8), S8, i(-1)), i(255));
    assert_eq!(un(UnOp::BitcastConvert(S8), U8, i(128)), i(-128));
    // A NaN becomes the canonical quiet NaN's bits.
    assert_eq!(
        un(UnOp::BitcastConvert(S32), F32, f(f64::NAN)),
        i(0x7fc0_0000)
    );
    assert_eq!(un(UnOp::BitcastConvert(U16), F16, f(f64::NAN)), i(0x7e00));
    assert!(is_nan(un(UnOp::BitcastConvert(F16), U16, i(0x7c01))));
}

/// What has no emitter is refused, saying why; an op on a type XLA does not define it for
/// is refused by the adapter, naming both.
#[test]
fn refusals_name_the_op_and_the_reason() {
    let refusal = |body: &str| {
        let mut s = ixmap::session::Session::new();
        s.execute(&format!("r {{\n{body}}}\n"));
        match sweep::spec_for(&s.hlo, "r").expect("r is defined") {
            Ok(_) => panic!("{body} was not refused"),
            Err(e) => e,
        }
    };
    let e = refusal(
        "  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n  ROOT c = c64[4] complex(a, b)\n",
    );
    assert!(e.contains("complex element types"), "{e}");
    let e = refusal("  a = f32[4] parameter(0)\n  b = u32[4] parameter(1)\n  ROOT c = bf16[4] stochastic-convert(a, b)\n");
    assert!(e.contains("stochastic-convert is not emitted"), "{e}");
    // An op on a type HLO does not have it for is refused where it is defined (the
    // elementwise op table), before any adapter sees it.
    let not_defined = |body: &str| {
        let mut s = ixmap::session::Session::new();
        let out = s.execute(&format!("r {{\n{body}}}\n"));
        assert!(sweep::spec_for(&s.hlo, "r").is_none(), "{body} was defined");
        match out.into_iter().find_map(|o| o.result.err()) {
            Some(d) => d.message,
            None => panic!("{body} was not refused"),
        }
    };
    let e = not_defined(
        "  a = f32[4] parameter(0)\n  b = f32[4] parameter(1)\n  ROOT c = f32[4] and(a, b)\n",
    );
    assert!(e.contains("`and` does not take f32"), "{e}");
    let e = not_defined("  a = s32[4] parameter(0)\n  ROOT c = s32[4] sine(a)\n");
    assert!(e.contains("`sine` does not take s32"), "{e}");
    let e = refusal("  a = f32[4] parameter(0)\n  ROOT c = s64[4] bitcast-convert(a)\n");
    assert!(e.contains("changes the element width"), "{e}");
    let e = refusal("  a = c64[4] parameter(0)\n  ROOT c = f32[4] real(a)\n");
    assert!(e.contains("complex element types are not supported"), "{e}");
}
