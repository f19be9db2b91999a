//! Element types (issue 14, part 3): for every type, a fusion of elementwise operations and
//! conversions, and an f16 reduction accumulating in f32, are
//!
//! - run as CUDA on the CPU (`src/gpu/cuda_on_cpu.h`) with every launch that applies,
//!   simplified and naive, and checked element by element against the reference;
//! - run as C on the CPU (the bench's backend), both variants verified;
//! - compiled by NVRTC for compute_80 and compute_90 and assembled by ptxas with no warning
//!   (when NVRTC is found; under `CI=true` it must be).
//!
//! And the 16-bit float conversions themselves, brute force: the C helpers the emitter
//! writes and the stand-ins of `cuda_on_cpu.h` agree bit for bit with the reference's
//! round-to-nearest-even on every f16/bf16 value, every midpoint between neighbours and
//! its two float neighbours, and a stride through all f32 bit patterns.

#[path = "common/cuda_program.rs"]
mod cuda_program;
#[path = "common/cpu_verify.rs"]
mod verify;

use cuda_program::CudaProgram;
use ixmap::gpu::cuda_cpu;
use ixmap::gpu::emit;
use ixmap::gpu::nvcc::{self, Nvrtc};
use ixmap::gpu::reference::{half_bits, half_value};
use ixmap::gpu::spec::{ElemType, KernelSpec};
use ixmap::gpu::sweep;
use verify::assert_verified_on_cpu;

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

fn has_cxx() -> bool {
    std::process::Command::new(cuda_cpu::compiler())
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The spec of computation `name` defined by `hlo`.
fn spec(hlo: &str, name: &str) -> KernelSpec {
    let mut s = ixmap::session::Session::new();
    s.execute(hlo);
    sweep::spec_for(&s.hlo, name)
        .unwrap_or_else(|| panic!("{name} is not defined"))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A fusion over type `t`: arithmetic in `t` (wrapping, or rounded to `t`), a comparison
/// and select, and conversions to and from other types.
fn fusion(t: ElemType) -> KernelSpec {
    let n = t.hlo_name();
    let body = match t {
        ElemType::Pred => "  a = pred[6,50] parameter(0)\n  b = pred[6,50] parameter(1)\n  m = pred[6,50] maximum(a, b)\n  n = pred[6,50] minimum(a, m)\n  c = pred[6,50] compare(m, n), direction=NE\n  s = s32[6,50] convert(c)\n  f = f32[6,50] convert(b)\n  g = f32[6,50] convert(s)\n  ROOT r = f32[6,50] add(f, g)\n".to_string(),
        _ if t.is_float() => format!(
            "  a = {n}[6,50] parameter(0)\n  b = {n}[6,50] parameter(1)\n  s = {n}[6,50] add(a, b)\n  m = {n}[6,50] multiply(s, b)\n  d = {n}[6,50] divide(m, a)\n  e = {n}[6,50] exponential(b)\n  x = {n}[6,50] subtract(d, e)\n  lt = pred[6,50] compare(x, a), direction=LT\n  y = {n}[6,50] select(lt, x, a)\n  i = s16[6,50] convert(y)\n  w = f64[6,50] convert(i)\n  v = {n}[6,50] convert(w)\n  ROOT r = {n}[6,50] add(v, y)\n"
        ),
        _ => format!(
            "  a = {n}[6,50] parameter(0)\n  b = {n}[6,50] parameter(1)\n  m = {n}[6,50] multiply(a, b)\n  m2 = {n}[6,50] multiply(m, m)\n  q = {n}[6,50] divide(m2, b)\n  r = {n}[6,50] remainder(a, b)\n  s = {n}[6,50] subtract(q, r)\n  ng = {n}[6,50] negate(s)\n  ab = {n}[6,50] abs(ng)\n  lt = pred[6,50] compare(ab, a), direction=GT\n  y = {n}[6,50] select(lt, ab, m2)\n  f = f32[6,50] convert(y)\n  h = bf16[6,50] convert(y)\n  hf = f32[6,50] convert(h)\n  g = f32[6,50] add(f, hf)\n  k = f32[] constant(1e10)\n  kb = f32[6,50] broadcast(k), dimensions={{}}\n  big = f32[6,50] multiply(g, kb)\n  back = {n}[6,50] convert(big)\n  ROOT out = {n}[6,50] add(back, y)\n"
        ),
    };
    spec(&format!("ty_{n} {{\n{body}}}\n"), &format!("ty_{n}"))
}

/// f16 values summed in f32 per row, written as f16 (XLA's form of a half reduction).
fn half_sum() -> KernelSpec {
    spec(
        "add_f32 {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\
         hsum {\n  x = f16[10,300] parameter(0)\n  c = f32[10,300] convert(x)\n  z = f32[] constant(0)\n  s = f32[10] reduce(c, z), dimensions={1}, to_apply=add_f32\n  ROOT h = f16[10] convert(s)\n}\n",
        "hsum",
    )
}

/// bf16 values summed in f32 per column, written as bf16.
fn col_sum() -> KernelSpec {
    spec(
        "add_f32 {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\
         csum {\n  x = bf16[70,40] parameter(0)\n  c = f32[70,40] convert(x)\n  z = f32[] constant(0)\n  s = f32[40] reduce(c, z), dimensions={0}, to_apply=add_f32\n  ROOT h = bf16[40] convert(s)\n}\n",
        "csum",
    )
}

fn all_specs() -> Vec<KernelSpec> {
    let mut v: Vec<KernelSpec> = ElemType::ALL.into_iter().map(fusion).collect();
    v.push(half_sum());
    v.push(col_sum());
    v
}

#[test]
fn every_type_runs_as_cuda_on_the_cpu_verified() {
    if !has_cxx() {
        assert!(!in_ci(), "CI and no C++ compiler");
        eprintln!("*** SKIPPED: no C++ compiler");
        return;
    }
    // Each compile of a kernel with the header takes about a second: the default launch of
    // every spec, and the naive form and the other launches for a few.
    let mut kinds = Vec::new();
    for spec in all_specs() {
        let all = ["ty_f16", "ty_s8", "hsum"].contains(&spec.name.as_str());
        for (i, (label, launch)) in sweep::launches(&spec).into_iter().enumerate() {
            if i > 0 && !all {
                continue;
            }
            let launch = launch.unwrap_or_else(|e| panic!("{} {label}: {e}", spec.name));
            for naive in [false, true] {
                if naive && !all {
                    continue;
                }
                cuda_cpu::check(&spec, &launch, naive)
                    .unwrap_or_else(|e| panic!("{} {label} naive={naive}: {e}", spec.name));
            }
            kinds.push(format!("{} {}", spec.name, launch.strategy.name()));
        }
    }
    for k in ["hsum row reduction", "csum column reduction", "ty_f16 loop"] {
        assert!(kinds.iter().any(|x| x == k), "no {k} among {kinds:?}");
    }
}

#[test]
fn every_type_runs_as_c_on_the_cpu_verified() {
    if !has_cxx() {
        assert!(!in_ci(), "CI and no C compiler");
        return;
    }
    for spec in all_specs() {
        assert_verified_on_cpu(&spec);
    }
}

#[test]
fn every_type_compiles_with_nvrtc_and_ptxas_without_warnings() {
    let nvrtc = match Nvrtc::load() {
        Ok(n) => n,
        Err(e) => {
            assert!(!in_ci(), "CI=true and {e}");
            eprintln!("*** SKIPPED: {e}");
            return;
        }
    };
    assert!(
        nvcc::cuda_include_dir().is_some() || !in_ci(),
        "CI=true and no cuda_fp16.h (nvidia-cuda-runtime-cu12 in target/venv)"
    );
    let ptxas = nvcc::find_ptxas();
    let tmp = std::env::temp_dir().join(format!("ixmap-types-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("temp dir");
    // One program per architecture, every kernel in it.
    let mut all = CudaProgram::default();
    for spec in all_specs() {
        for (label, launch) in sweep::launches(&spec) {
            let launch = launch.expect("launch");
            for naive in [false, true] {
                let e = emit::cuda::emit(&spec, &launch, naive).expect("emits");
                let naive = if naive { " naive" } else { "" };
                all.add(
                    &format!("{} {label}{naive}", spec.name),
                    &e.source,
                    &e.entry,
                );
            }
        }
    }
    let (program, n) = (all.text(), all.kernels);
    for (arch, sm) in [("compute_80", "sm_80"), ("compute_90", "sm_90")] {
        let opt = format!("--gpu-architecture={arch}");
        let c = nvrtc.compile(&program, "types.cu", &[&opt]).expect("nvrtc");
        assert!(
            c.ptx.is_some() && c.log.is_empty(),
            "{arch}: {n} kernels:\n{}",
            c.log
        );
        if let (Some(ptx), Some(pt)) = (c.ptx, ptxas.as_deref()) {
            let a = nvcc::ptxas(pt, &ptx, sm, &tmp).expect("ptxas runs");
            assert!(
                a.ok && a.diagnostics.is_empty(),
                "{sm}: {:?}",
                a.diagnostics
            );
            assert_eq!(a.kernels.len(), n, "{sm}: every kernel assembled");
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

/// Floats to convert: every f16 and bf16 value, the midpoints between neighbours and the
/// floats just beside them, and a stride through all f32 bit patterns.
fn probe_floats() -> Vec<f32> {
    let mut v = Vec::new();
    for (elem, step) in [(ElemType::F16, 1u32), (ElemType::BF16, 1)] {
        for h in (0..=0xffffu32).step_by(step as usize) {
            let x = half_value(elem, h as u16) as f32;
            v.push(x);
            let next = half_value(elem, (h as u16).wrapping_add(1)) as f32;
            if x.is_finite() && next.is_finite() && (h & 0x7fff) != 0x7fff {
                let mid = ((x as f64 + next as f64) / 2.0) as f32;
                v.push(mid);
                v.push(f32::from_bits(mid.to_bits().wrapping_add(1)));
                v.push(f32::from_bits(mid.to_bits().wrapping_sub(1)));
            }
        }
    }
    let mut b = 0u64;
    while b <= u32::MAX as u64 {
        v.push(f32::from_bits(b as u32));
        b += 65_521;
    }
    v
}

/// Runs a program printing, per input float (hex bits on stdin), the f16 and bf16 bits.
fn run_converter(src: &str, ext: &str, compiler: &str, floats: &[f32]) -> Vec<(u16, u16)> {
    let dir = std::env::temp_dir().join(format!("ixmap-half-{}-{ext}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join(format!("conv.{ext}"));
    let exe = dir.join("conv");
    std::fs::write(&file, src).expect("write");
    let out = std::process::Command::new(compiler)
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(&file)
        .output()
        .expect("compiler runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let input: String = floats
        .iter()
        .map(|f| format!("{:08x}\n", f.to_bits()))
        .collect();
    let in_file = dir.join("in.txt");
    std::fs::write(&in_file, input).expect("write");
    let out = std::process::Command::new(&exe)
        .stdin(std::fs::File::open(&in_file).expect("open"))
        .output()
        .expect("runs");
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let (a, b) = l.split_once(' ').expect("two numbers");
            (
                u16::from_str_radix(a, 16).expect("hex"),
                u16::from_str_radix(b, 16).expect("hex"),
            )
        })
        .collect()
}

fn check_bits(what: &str, floats: &[f32], got: &[(u16, u16)]) {
    assert_eq!(got.len(), floats.len(), "{what}");
    for (&f, &(h, b)) in floats.iter().zip(got) {
        for (elem, bits) in [(ElemType::F16, h), (ElemType::BF16, b)] {
            let want = half_bits(elem, f as f64);
            // NaNs: any NaN will do (the payload is not specified); the sign kept.
            let nan = half_value(elem, want).is_nan() && half_value(elem, bits).is_nan();
            assert!(
                bits == want || nan,
                "{what}: {} of {f:e} ({:08x}) is {bits:04x}, the reference says {want:04x}",
                elem.hlo_name(),
                f.to_bits()
            );
        }
    }
}

#[test]
fn sixteen_bit_conversions_round_to_nearest_even_bit_for_bit() {
    if !has_cxx() {
        assert!(!in_ci(), "CI and no C compiler");
        return;
    }
    let floats = probe_floats();
    // The C helpers the host emitter writes.
    let helpers = emit::types::helpers("ix_f2h( ix_f2bf(", false);
    let c = format!(
        "#include <stdio.h>\n#include <stdint.h>\n#include <math.h>\n{helpers}\nint main(void) {{ unsigned u; while (scanf(\"%x\", &u) == 1) {{ ix_bits c; c.u = u; printf(\"%04x %04x\\n\", ix_f2h(c.f), ix_f2bf(c.f)); }} return 0; }}\n"
    );
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    check_bits("C helpers", &floats, &run_converter(&c, "c", &cc, &floats));
    // The stand-ins of cuda_on_cpu.h.
    let cpp = format!(
        "{}\n#include <stdio.h>\nint main() {{ unsigned u; while (scanf(\"%x\", &u) == 1) {{ const float f = __int_as_float((int)u); printf(\"%04x %04x\\n\", __float2half_rn(f).x, __float2bfloat16_rn(f).x); }} return 0; }}\n",
        cuda_cpu::HEADER
    );
    check_bits(
        "cuda_on_cpu.h",
        &floats,
        &run_converter(&cpp, "cpp", &cuda_cpu::compiler(), &floats),
    );
}

/// 128-bit loads and stores: operands whose `vector` elements are contiguous and aligned
/// are read with one `float4` / `uint4` / `double2`, the others element by element; every
/// kernel runs on the CPU verified, and NVRTC's PTX has the vector instructions.
#[test]
fn vector_loads_are_128_bit_where_the_maps_prove_contiguity() {
    use ixmap::gpu::launch::{choose, LaunchConfig};
    let hlo = "vadd {\n  p0 = f32[20,8,300] parameter(0)\n  p1 = f32[300] parameter(1)\n  b = f32[20,8,300] broadcast(p1), dimensions={2}\n  ROOT a = f32[20,8,300] add(p0, b)\n}\n\
               vhalf {\n  p0 = f16[6,64] parameter(0)\n  p1 = f16[6,64] parameter(1)\n  ROOT m = f16[6,64] multiply(p0, p1)\n}\n\
               vdbl {\n  p0 = f64[6,64] parameter(0)\n  p1 = f64[64,6] parameter(1)\n  t = f64[6,64] transpose(p1), dimensions={1,0}\n  ROOT s = f64[6,64] subtract(p0, t)\n}\n\
               vrow {\n  p0 = f32[9,40] parameter(0)\n  p1 = f32[9] parameter(1)\n  b = f32[9,40] broadcast(p1), dimensions={0}\n  ROOT d = f32[9,40] divide(p0, b)\n}\n\
               vbit {\n  p0 = f32[16,300] parameter(0)\n  p1 = f32[4,4,300] parameter(1)\n  b = f32[4,4,300] bitcast(p0)\n  m = f32[4,4,300] multiply(b, p1)\n  ROOT a = f32[4,4,300] add(m, b)\n}\n\
               vfn {\n  p0 = f32[16,300] parameter(0)\n  p1 = f32[16,300] parameter(1)\n  e = f32[16,300] exponential(p0)\n  m = f32[16,300] multiply(e, p1)\n  a = f32[16,300] add(m, e)\n  ROOT r = f32[16,300] add(a, p0)\n}\n";
    // (fusion, vector, the inputs loaded as vectors, whether the output is stored as one);
    // vbit reads p0 through the bitcast's function (read twice, a partition of its own),
    // as the dumps' gelu loops do: one vector load through the call.
    // vfn reads p0 inside a function that computes (exp, used twice) and directly: the
    // function written in place, p0 one vector load for both.
    let cases: [(&str, i64, &[usize], bool); 7] = [
        ("vadd", 4, &[0, 1], true),
        ("vbit", 4, &[0, 1], true),
        ("vfn", 4, &[0, 1], true),
        ("vhalf", 8, &[0, 1], true),
        ("vdbl", 2, &[0], true),
        ("vrow", 4, &[0], true),
        // 2 f32 are 64 bits, not 128: no vector loads.
        ("vadd", 2, &[], false),
    ];
    let nvrtc = Nvrtc::load().ok();
    for (name, vector, vec_inputs, vec_out) in cases {
        let spec = spec(hlo, name);
        let cfg = LaunchConfig {
            block: 64,
            vector,
            unroll: 1,
            ..Default::default()
        };
        let launch = choose(&spec, cfg, Some(false)).expect("launch");
        let e = emit::cuda::emit(&spec, &launch, false).expect("emits");
        for k in 0..spec.inputs.len() {
            let vectorized = e.source.contains(&format!("// p{k} ("))
                && e.source.contains(&format!("*>(p{k} + "));
            assert_eq!(
                vectorized,
                vec_inputs.contains(&k),
                "{name} vector={vector} p{k}:\n{}",
                e.source
            );
        }
        assert_eq!(e.source.contains("128-bit store"), vec_out, "{}", e.source);
        if name == "vbit" {
            assert!(e.source.contains("in place at"), "{}", e.source);
        }
        if name == "vfn" {
            assert!(e.source.contains("in place at"), "{}", e.source);
            assert_eq!(e.source.matches("*>(p0 + ").count(), 1, "{}", e.source);
            assert_eq!(e.source.matches("expf(").count(), 1, "{}", e.source);
        }
        if has_cxx() {
            cuda_cpu::check(&spec, &launch, false)
                .unwrap_or_else(|err| panic!("{name} vector={vector}: {err}\n{}", e.source));
        }
        if has_cxx() && name == "vadd" && vector == 4 {
            cuda_cpu::check(&spec, &launch, true)
                .unwrap_or_else(|err| panic!("{name} vector={vector} naive: {err}"));
            // Chunks and an unroll around the vectors.
            let cfg = LaunchConfig {
                unroll: 3,
                max_blocks: 2,
                ..cfg
            };
            let launch = choose(&spec, cfg, Some(false)).expect("launch");
            cuda_cpu::check(&spec, &launch, false)
                .unwrap_or_else(|err| panic!("{name} vector={vector} unroll=3: {err}"));
        }
        if let Some(nv) = &nvrtc {
            let c = nv
                .compile(&e.source, "kernel.cu", &["--gpu-architecture=compute_90"])
                .expect("nvrtc");
            let ptx = c.ptx.unwrap_or_else(|| panic!("{}\n{}", c.log, e.source));
            assert!(c.log.is_empty(), "{}", c.log);
            let wide_ld = ptx
                .lines()
                .any(|l| l.contains("ld.global") && (l.contains(".v4.") || l.contains(".v2.f64")));
            let wide_st = ptx
                .lines()
                .any(|l| l.contains("st.global") && (l.contains(".v4.") || l.contains(".v2.f64")));
            assert_eq!(wide_ld, !vec_inputs.is_empty(), "{name}: {ptx}");
            assert_eq!(wide_st, vec_out, "{name}: {ptx}");
        }
    }
}
