//! GEMM kernels of dot fusions (`gpu::gemm`, `gpu::emit::gemm`) against a naive triple
//! loop written here, independent of the crate's reference: the host C kernel and the CUDA
//! text run on the CPU, on shapes that are not multiples of the tile, with batch
//! dimensions, transposed and column-major operands, several contracting dimensions, a
//! prologue and an epilogue, f16 and bf16; and every CUDA kernel compiled by NVRTC for
//! compute_80 and compute_90 and assembled by ptxas without a warning when they are found.
//!
//! Tolerance of the naive check: the kernels accumulate in `f32`, the loop here in `f64`;
//! for `K` products the `f32` sum is within `K · 2^-24 · Σ|a·b|` of the exact one (the
//! recursive-summation bound), plus one unit in the last place of a 16-bit output, and an
//! epilogue here is 1-Lipschitz (add, multiply by a constant ≤ 1, tanh), so that bound
//! carries through.

use ixmap::gpu::bench::gemm::{check_c, check_cuda_on_cpu, inputs, run_c, run_cuda_on_cpu};
use ixmap::gpu::emit::gemm::{cuda, Config};
use ixmap::gpu::gemm::{for_name, GemmSpec, Tiling};
use ixmap::gpu::spec::{ElemType, Tensor};
use ixmap::session::Session;

fn gemm(hlo: &str, name: &str) -> GemmSpec {
    let mut s = Session::new();
    for o in s.execute(hlo) {
        if let Err(e) = &o.result {
            panic!("{hlo}\n{e:?}");
        }
    }
    for_name(&s.hlo, name)
        .expect("has a dot")
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn config(t: Tiling) -> Config {
    Config {
        tiling: t,
        split: t.split().expect("splits"),
        naive: false,
    }
}

fn tiling(bm: i64, bn: i64, bk: i64, warps: i64, stages: i64) -> Tiling {
    Tiling {
        bm,
        bn,
        bk,
        warps,
        stages,
    }
}

/// A 16-bit float's value, decoded here (not with the crate's helpers).
fn half(t: ElemType, h: u16) -> f64 {
    match t {
        ElemType::BF16 => f32::from_bits((h as u32) << 16) as f64,
        _ => {
            let s = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
            let e = ((h >> 10) & 0x1f) as i32;
            let m = (h & 0x3ff) as f64;
            s * match e {
                0 => m * 2f64.powi(-24),
                31 => f64::NAN,
                _ => (1.0 + m / 1024.0) * 2f64.powi(e - 15),
            }
        }
    }
}

/// Every element of a tensor's buffer at its logical index, row-major.
fn logical(t: &Tensor, bytes: &[u8]) -> Vec<f64> {
    let n: i64 = t.dims.iter().product();
    // Strides from the layout, computed here.
    let mut strides = vec![0i64; t.dims.len()];
    let mut s = 1;
    for &d in &t.minor_to_major {
        strides[d] = s;
        s *= t.dims[d];
    }
    (0..n)
        .map(|lin| {
            let mut rest = lin;
            let mut off = 0;
            for d in (0..t.dims.len()).rev() {
                off += (rest % t.dims[d]) * strides[d];
                rest /= t.dims[d];
            }
            let off = off as usize;
            match t.elem {
                ElemType::F32 => {
                    f32::from_le_bytes(bytes[off * 4..off * 4 + 4].try_into().unwrap()) as f64
                }
                ElemType::F16 | ElemType::BF16 => half(
                    t.elem,
                    u16::from_le_bytes(bytes[off * 2..off * 2 + 2].try_into().unwrap()),
                ),
                other => panic!("{other:?} input in a test"),
            }
        })
        .collect()
}

/// The naive result: per output element (row-major), the value and its tolerance.
type Naive = Vec<(f64, f64)>;

/// `out[b][m][n] = f(Σ_k a(b, m, k) · b(b, k, n), b, m, n)`, with the `f32` bound; the
/// output of type `out`.
fn triple_loop(
    (nb, m, n, k): (usize, usize, usize, usize),
    a: &dyn Fn(usize, usize, usize) -> f64,
    b: &dyn Fn(usize, usize, usize) -> f64,
    epilogue: &dyn Fn(f64, usize, usize, usize) -> f64,
    out: ElemType,
) -> Naive {
    let mut r = Vec::new();
    for bz in 0..nb {
        for i in 0..m {
            for j in 0..n {
                let (mut s, mut abs) = (0.0, 0.0);
                for q in 0..k {
                    let p = a(bz, i, q) * b(bz, q, j);
                    s += p;
                    abs += p.abs();
                }
                let v = epilogue(s, bz, i, j);
                let mut tol = k as f64 * 2f64.powi(-24) * abs + 1e-6 * v.abs();
                if out != ElemType::F32 {
                    // One unit in the last place of the 16-bit type, for the dot's rounding
                    // and the output's.
                    let mant = if out == ElemType::BF16 { 7 } else { 10 };
                    tol += 2.0 * 2f64.powi((v.abs().max(1e-30)).log2().floor() as i32 - mant);
                }
                r.push((v, tol));
            }
        }
    }
    r
}

/// Output bytes in the output's layout → row-major values.
fn compare(g: &GemmSpec, what: &str, out: &[u8], want: &Naive) {
    let got = logical(&g.output, out);
    assert_eq!(got.len(), want.len(), "{what}: element count");
    for (i, (&x, &(w, tol))) in got.iter().zip(want).enumerate() {
        assert!(
            (x - w).abs() <= tol,
            "{what}: element {i} (row-major) is {x}, the naive loop says {w} (tolerance {tol:e})"
        );
    }
}

/// Runs `g` under each tiling as host C and as CUDA on the CPU, checks both against
/// `want` (computed from the inputs' logical values) and against the crate's reference.
fn check_all(g: &GemmSpec, tilings: &[Tiling], want: &dyn Fn(&[Vec<f64>]) -> Naive) {
    let ins = inputs(g).expect("inputs");
    let vals: Vec<Vec<f64>> = g
        .inputs
        .iter()
        .zip(&ins)
        .map(|(t, b)| logical(t, b))
        .collect();
    let naive = want(&vals);
    for &t in tilings {
        let c = config(t);
        let what = format!("{} ({})", g.name, t.describe());
        let out = run_c(g, &c, &ins).unwrap_or_else(|e| panic!("{what}, C: {e}"));
        compare(g, &format!("{what}, C"), &out, &naive);
        for wide in [false, true] {
            let (out, bits) = run_cuda_on_cpu(g, &c, wide, &ins)
                .unwrap_or_else(|e| panic!("{what}, CUDA on the CPU: {e}"));
            assert_eq!(bits, if wide { 64 } else { 32 });
            compare(
                g,
                &format!("{what}, CUDA on the CPU ({bits}-bit)"),
                &out,
                &naive,
            );
        }
        // The crate's own reference and tolerance agree on the same kernels.
        check_c(g, &c).unwrap_or_else(|e| panic!("{what}: {e}"));
        check_cuda_on_cpu(g, &c, false).unwrap_or_else(|e| panic!("{what}: {e}"));
        compiles_for_cuda(g, &c);
    }
}

/// NVRTC (compute_80, compute_90) and ptxas (sm_80, sm_90) accept the kernel with no
/// warning, when they are installed (scripts/cuda-requirements.txt in target/venv).
fn compiles_for_cuda(g: &GemmSpec, c: &Config) {
    use ixmap::gpu::nvcc::{self, Nvrtc};
    let Ok(nvrtc) = Nvrtc::load() else {
        eprintln!("NVRTC not found: {} not compiled for CUDA", g.name);
        return;
    };
    let (e, _) = cuda(g, c).expect("emits");
    let tmp = std::env::temp_dir();
    for (arch, sm) in [("compute_80", "sm_80"), ("compute_90", "sm_90")] {
        let r = nvrtc
            .compile(
                &e.source,
                "gemm.cu",
                &[&format!("--gpu-architecture={arch}")],
            )
            .expect("NVRTC runs");
        assert!(r.log.is_empty(), "NVRTC {arch}: {}\n{}", r.log, e.source);
        let ptx = r.ptx.expect("PTX");
        if let Some(p) = nvcc::find_ptxas() {
            let a = nvcc::ptxas(&p, &ptx, sm, &tmp).expect("ptxas runs");
            assert!(
                a.ok && a.diagnostics.is_empty(),
                "ptxas {sm}: {:?}",
                a.diagnostics
            );
            for k in &a.kernels {
                assert_eq!(k.spill_stores + k.spill_loads, 0, "{sm}: {k:?} spills");
            }
        }
    }
}

#[test]
fn plain_f32_with_edges_on_every_side() {
    // 37 x 29 output, K = 50: no size is a multiple of any tile below.
    let g = gemm(
        "p0 = f32[37, 50] parameter(0)\np1 = f32[50, 29] parameter(1)\n\
         d = f32[37, 29] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        "d",
    );
    assert_eq!((g.b, g.m, g.n, g.k), (1, 37, 29, 50));
    check_all(
        &g,
        &[
            tiling(16, 16, 8, 2, 2),
            tiling(32, 16, 16, 4, 1),
            tiling(16, 8, 16, 2, 3),
            Tiling::default(),
        ],
        &|v| {
            triple_loop(
                (1, 37, 29, 50),
                &|_, i, q| v[0][i * 50 + q],
                &|_, q, j| v[1][q * 29 + j],
                &|s, _, _, _| s,
                ElemType::F32,
            )
        },
    );
}

#[test]
fn batched_attention_shapes() {
    // bhqd,bhkd->bhqk: both contract their minor dimension (B loaded K-fastest).
    let g = gemm(
        "qk {\n  q = f32[3, 20, 12] parameter(0)\n  k = f32[3, 18, 12] parameter(1)\n\
         d = f32[3, 20, 18] dot(q, k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}\n\
         c = f32[] constant(0.125)\n  b = f32[3, 20, 18] broadcast(c), dimensions={}\n\
         ROOT s = f32[3, 20, 18] multiply(d, b)\n}",
        "qk",
    );
    assert_eq!((g.b, g.m, g.n, g.k), (3, 20, 18, 12));
    assert!(g.lhs.k_minor && g.rhs.k_minor);
    check_all(
        &g,
        &[tiling(16, 8, 8, 1, 2), tiling(32, 32, 4, 2, 1)],
        &|v| {
            triple_loop(
                (3, 20, 18, 12),
                &|b, i, q| v[0][(b * 20 + i) * 12 + q],
                &|b, q, j| v[1][(b * 18 + j) * 12 + q],
                &|s, _, _, _| s * 0.125,
                ElemType::F32,
            )
        },
    );
}

#[test]
fn transposed_operands_and_a_column_major_layout() {
    // lhs [K, M] contracting its dimension 0, rhs [N, K] contracting its dimension 1, and
    // the output column-major.
    let g = gemm(
        "p0 = f32[33, 21] parameter(0)\np1 = f32[19, 33] parameter(1)\n\
         d = f32[21, 19]{0,1} dot(p0, p1), lhs_contracting_dims={0}, rhs_contracting_dims={1}",
        "d",
    );
    assert!(!g.lhs.k_minor && g.rhs.k_minor);
    let f = |v: &[Vec<f64>]| {
        triple_loop(
            (1, 21, 19, 33),
            &|_, i, q| v[0][q * 21 + i],
            &|_, q, j| v[1][j * 33 + q],
            &|s, _, _, _| s,
            ElemType::F32,
        )
    };
    check_all(&g, &[tiling(16, 16, 8, 2, 2), tiling(8, 32, 16, 1, 1)], &f);
    // An operand stored column-major: the same values at other offsets.
    let g = gemm(
        "p0 = f32[21, 33]{0,1} parameter(0)\np1 = f32[33, 19]{0,1} parameter(1)\n\
         d = f32[21, 19] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        "d",
    );
    assert!(!g.lhs.k_minor && g.rhs.k_minor);
    check_all(&g, &[tiling(16, 16, 8, 2, 2)], &|v| {
        triple_loop(
            (1, 21, 19, 33),
            &|_, i, q| v[0][i * 33 + q],
            &|_, q, j| v[1][q * 19 + j],
            &|s, _, _, _| s,
            ElemType::F32,
        )
    });
}

#[test]
fn prologue_and_epilogue_as_xla_fuses_them() {
    // The layer-norm scale and shift applied to the lhs as its tiles load; the rhs converted
    // from f16; a bias added and tanh applied to the result.
    let g = gemm(
        "gemm_fusion {\n  p0 = f32[24, 40] parameter(0)\n  p1 = f32[40] parameter(1)\n\
         b1 = f32[24, 40] broadcast(p1), dimensions={1}\n  m = f32[24, 40] multiply(p0, b1)\n\
         p2 = f32[40] parameter(2)\n  b2 = f32[24, 40] broadcast(p2), dimensions={1}\n\
         a = f32[24, 40] add(m, b2)\n  p3 = f16[40, 30] parameter(3)\n\
         c = f32[40, 30] convert(p3)\n\
         d = f32[24, 30] dot(a, c), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n\
         p4 = f32[30] parameter(4)\n  b4 = f32[24, 30] broadcast(p4), dimensions={1}\n\
         e = f32[24, 30] add(d, b4)\n  ROOT t = f32[24, 30] tanh(e)\n}",
        "gemm_fusion",
    );
    assert!(g.epilogue.is_some());
    check_all(
        &g,
        &[tiling(16, 16, 8, 2, 2), tiling(32, 32, 16, 4, 3)],
        &|v| {
            // The lhs prologue rounds to f32 after each operation, as the kernel does.
            let lhs = |i: usize, q: usize| {
                let m = (v[0][i * 40 + q] as f32) * (v[1][q] as f32);
                (m + v[2][q] as f32) as f64
            };
            triple_loop(
                (1, 24, 30, 40),
                &|_, i, q| lhs(i, q),
                &|_, q, j| v[3][q * 30 + j],
                &|s, _, _, j| (s + v[4][j]).tanh(),
                ElemType::F32,
            )
        },
    );
}

/// An epilogue that uses a value twice (a DAG, not a chain: `h` feeds both `tanh` and a
/// multiply) is fused: the shared value is recomputed per use, per accumulator.
#[test]
fn an_epilogue_that_uses_a_value_twice_is_fused() {
    let g = gemm(
        "gemm_dag {\n  p0 = f32[20, 24] parameter(0)\n  p1 = f32[24, 18] parameter(1)\n\
         d = f32[20, 18] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n\
         c = f32[] constant(0.5)\n  cb = f32[20, 18] broadcast(c), dimensions={}\n\
         h = f32[20, 18] multiply(d, cb)\n  t = f32[20, 18] tanh(h)\n\
         q = f32[] constant(0.25)\n  qb = f32[20, 18] broadcast(q), dimensions={}\n\
         hq = f32[20, 18] multiply(h, qb)\n  ROOT r = f32[20, 18] add(t, hq)\n}",
        "gemm_dag",
    );
    let e = g.epilogue.as_ref().expect("an epilogue");
    assert_eq!(e.functions.len(), 1, "the shared value is inlined");
    check_all(&g, &[tiling(16, 16, 8, 2, 2)], &|v| {
        triple_loop(
            (1, 20, 18, 24),
            &|_, i, q| v[0][i * 24 + q],
            &|_, q, j| v[1][q * 18 + j],
            // tanh(s/2) + s/8: increasing, and 1-Lipschitz (slope at most 5/8).
            &|s, _, _, _| (s * 0.5).tanh() + s * 0.125,
            ElemType::F32,
        )
    });
}

#[test]
fn bf16_and_f16_inputs_accumulate_in_f32() {
    // bf16 x bf16 -> bf16: the f32 sum rounded once, at the end.
    let g = gemm(
        "p0 = bf16[17, 64] parameter(0)\np1 = bf16[64, 23] parameter(1)\n\
         d = bf16[17, 23] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        "d",
    );
    check_all(&g, &[tiling(16, 16, 16, 2, 2)], &|v| {
        triple_loop(
            (1, 17, 23, 64),
            &|_, i, q| v[0][i * 64 + q],
            &|_, q, j| v[1][q * 23 + j],
            &|s, _, _, _| s,
            ElemType::BF16,
        )
    });
    // f16 inputs with an f32 result.
    let g = gemm(
        "p0 = f16[9, 70] parameter(0)\np1 = f16[70, 12] parameter(1)\n\
         d = f32[9, 12] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        "d",
    );
    check_all(&g, &[tiling(16, 16, 16, 1, 2)], &|v| {
        triple_loop(
            (1, 9, 12, 70),
            &|_, i, q| v[0][i * 70 + q],
            &|_, q, j| v[1][q * 12 + j],
            &|s, _, _, _| s,
            ElemType::F32,
        )
    });
}

#[test]
fn several_contracting_and_free_dimensions_are_linearized() {
    // lhs [2, 5, 3, 4]: batch 0, free 1, contracting (3, 2); rhs [2, 4, 3, 6]: batch 0,
    // contracting (1, 2), free 3. K = 4 x 3 linearized in the dot's contracting order.
    let g = gemm(
        "p0 = f32[2, 5, 3, 4] parameter(0)\np1 = f32[2, 4, 3, 6] parameter(1)\n\
         d = f32[2, 5, 6] dot(p0, p1), lhs_batch_dims={0}, lhs_contracting_dims={3, 2}, rhs_batch_dims={0}, rhs_contracting_dims={1, 2}",
        "d",
    );
    assert_eq!((g.b, g.m, g.n, g.k), (2, 5, 6, 12));
    check_all(&g, &[tiling(8, 8, 4, 1, 2)], &|v| {
        // k = (k0, k1) over (lhs dim 3, lhs dim 2) = (rhs dim 1, rhs dim 2), row-major.
        triple_loop(
            (2, 5, 6, 12),
            &|b, i, q| v[0][((b * 5 + i) * 3 + q % 3) * 4 + q / 3],
            &|b, q, j| v[1][((b * 4 + q / 3) * 3 + q % 3) * 6 + j],
            &|s, _, _, _| s,
            ElemType::F32,
        )
    });
}

#[test]
fn xla_tiling_is_read_from_backend_config() {
    let hlo = "%gemm_fusion_dot_computation (parameter_0: f32[32,40], parameter_1: f32[40,24]) -> f32[32,24] {\n\
        %parameter_0 = f32[32,40]{1,0} parameter(0)\n  %parameter_1 = f32[40,24]{1,0} parameter(1)\n\
        ROOT %dot.6 = f32[32,24]{1,0} dot(%parameter_0, %parameter_1), lhs_contracting_dims={1}, rhs_contracting_dims={0}, backend_config={\"sizes\":[\"16\"]}\n}\n\
        ENTRY %main (a: f32[32,40], b: f32[40,24]) -> f32[32,24] {\n  %a = f32[32,40]{1,0} parameter(0)\n  %b = f32[40,24]{1,0} parameter(1)\n\
        ROOT %gemm_fusion_dot = f32[32,24]{1,0} fusion(%a, %b), kind=kCustom, calls=%gemm_fusion_dot_computation, backend_config={\"fusion_backend_config\":{\"block_level_fusion_config\":{\"num_stages\":1,\"num_warps\":\"2\",\"output_tiles\":[{\"sizes\":[\"16\",\"8\"]}]},\"kind\":\"__triton_nested_gemm_fusion\"}}\n}\n";
    let g = gemm(hlo, "gemm_fusion_dot");
    assert_eq!(g.xla, Some(tiling(16, 8, 16, 2, 1)));
    // XLA's tile is kept (dump shows it) but the default is ixmap's, for f32 on CUDA cores.
    let (t, _, origin) = g.tiling(None).expect("tiles");
    assert_eq!(
        (t, origin),
        (tiling(16, 16, 8, 2, 2), "ixmap's for f32 on CUDA cores")
    );
    // XLA's tiling still runs when asked: 64 threads as 8 x 8, each 2 rows of 1 column.
    let x = g.xla.unwrap();
    let (t, s, origin) = g.tiling(Some(x)).expect("tiles");
    assert_eq!((t, origin), (x, "given"));
    assert_eq!((s.tx, s.ty, s.tm, s.tn), (8, 8, 2, 1));
    check_cuda_on_cpu(&g, &config(t), false).expect("verifies");
}

/// ixmap's default tiling for the shapes of the shared dumps' GEMMs (H100: 132 SMs): the
/// largest tile that does not overhang the output past a power of two and still gives every
/// SM a block.
#[test]
fn simt_tiling_fills_the_device_with_the_largest_tile() {
    let cases = [
        // (batch, M, K, N, expected bm, bn, warps)
        (1, 2048, 1024, 4096, 128, 128, 8),
        (1, 4096, 2048, 1024, 128, 128, 8),
        (1, 2048, 4096, 1024, 128, 64, 4),
        (32, 512, 64, 512, 128, 128, 8),
        (32, 512, 512, 128, 128, 64, 4),
        (32, 512, 512, 64, 64, 64, 4),
        (1, 37, 50, 29, 16, 16, 2),
        (1, 8, 8, 8, 16, 16, 2),
    ];
    for (b, m, k, n, bm, bn, warps) in cases {
        let hlo = if b == 1 {
            format!(
                "p0 = f32[{m}, {k}] parameter(0)\np1 = f32[{k}, {n}] parameter(1)\n\
                 d = f32[{m}, {n}] dot(p0, p1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"
            )
        } else {
            format!(
                "p0 = f32[{b}, {m}, {k}] parameter(0)\np1 = f32[{b}, {k}, {n}] parameter(1)\n\
                 d = f32[{b}, {m}, {n}] dot(p0, p1), lhs_batch_dims={{0}}, lhs_contracting_dims={{2}}, rhs_batch_dims={{0}}, rhs_contracting_dims={{1}}"
            )
        };
        let g = gemm(&hlo, "d");
        let t = g.simt_tiling(132);
        assert_eq!(
            (t.bm, t.bn, t.bk, t.warps, t.stages),
            (bm, bn, 8, warps, 2),
            "B = {b}, M = {m}, N = {n}, K = {k}"
        );
        let s = t.split().expect("splits");
        assert!(s.tm * s.tn <= 64, "{s:?}");
    }
}

/// Every tiling `simt_tiling` can choose runs: the CUDA text on the CPU and the C kernel,
/// against the naive loop, on a shape no tile divides, with a prologue and an epilogue (the
/// two-stage pipeline through registers, and its guarded last loads).
#[test]
fn every_simt_tiling_runs_at_uneven_shapes() {
    let g = gemm(
        "gf {\n  p0 = f32[130, 37] parameter(0)\n  p1 = f32[37] parameter(1)\n\
         b1 = f32[130, 37] broadcast(p1), dimensions={1}\n  m = f32[130, 37] multiply(p0, b1)\n\
         p3 = f32[140, 37] parameter(2)\n\
         d = f32[130, 140] dot(m, p3), lhs_contracting_dims={1}, rhs_contracting_dims={1}\n\
         ROOT t = f32[130, 140] tanh(d)\n}",
        "gf",
    );
    assert_eq!((g.b, g.m, g.n, g.k), (1, 130, 140, 37));
    let all = Tiling::simt_candidates();
    assert_eq!(all.len(), 8);
    // Micro-tiles in fours read shared memory 128 bits at a time; 2 x 2 ones (16 x 16 on 64
    // threads) one float at a time. Both with the two stages through registers.
    for t in &all {
        let s = t.split().expect("splits");
        let src = cuda(&g, &config(*t)).expect("emits").0.source;
        let vector = src.contains("const float4 q = *reinterpret_cast<const float4 *>(&sa[buf]");
        assert_eq!(
            vector,
            s.tm % 4 == 0 && s.tn % 4 == 0,
            "{}: {s:?}",
            t.describe()
        );
        assert!(
            src.contains("_fetch_a(") && src.contains("_put_b("),
            "{}",
            t.describe()
        );
    }
    let (t128, t16) = (all[0].split().unwrap(), all[7].split().unwrap());
    assert!(t128.vector_shared_loads() && !t16.vector_shared_loads());
    check_all(&g, &all, &|v| {
        triple_loop(
            (1, 130, 140, 37),
            &|_, i, q| ((v[0][i * 37 + q] as f32) * (v[1][q] as f32)) as f64,
            &|_, q, j| v[2][j * 37 + q],
            &|s, _, _, _| s.tanh(),
            ElemType::F32,
        )
    });
}

#[test]
fn tilings_that_cannot_run_are_refused_with_the_reason() {
    let e = tiling(16, 8, 16, 8, 1).split().unwrap_err();
    assert!(e.contains("cannot be split evenly over 256 threads"), "{e}");
    let e = tiling(256, 256, 32, 4, 2).split().unwrap_err();
    assert!(e.contains("shared memory"), "{e}");
    let e = tiling(128, 128, 8, 1, 1).split().unwrap_err();
    assert!(e.contains("accumulators"), "{e}");
    let e = tiling(0, 8, 8, 1, 1).split().unwrap_err();
    assert!(e.contains("must be in [1, 1024]"), "{e}");
}
