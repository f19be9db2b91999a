//! `ix_expf` (`gpu::emit::cpu::C_EXPF`), the vectorizable `expf` of the CPU's row kernels,
//! against libm's `exp` in double over a sweep of f32 inputs (13M): a stride through every bit
//! pattern (both signs, every exponent), every input whose result is subnormal or rounds to
//! zero near the edge (-104 to -87), the overflow edge, and the special values (±0, ±inf,
//! NaNs with payloads, the largest and smallest floats). Compiled as the bench compiles
//! kernels (`cc -O3 -march=native -fno-trapping-math -std=c11`), so with fused multiply-add
//! where the machine has it, and again without (`-mno-fma`, on x86-64), so both forms of the
//! polynomial are checked. Bounds: within 1 ulp where the exact result is a normal float,
//! 1 ulp of the subnormal spacing (2^-149) below that, exactly inf above the largest float's
//! rounding edge and at +inf, 0 at -inf, NaN for NaN; and every element within the
//! tolerance the bench checks an elementwise f32 output with (relative 1e-6 of
//! `max(|want|, 1)`, `gpu::reference::matches`).

use ixmap::gpu::emit::cpu::C_EXPF;
use std::path::Path;
use std::process::Command;

/// The C program: sweeps the inputs, prints one line of counts and worst errors.
fn program() -> String {
    format!(
        r#"#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
{C_EXPF}
static float from_bits(uint32_t u) {{ float f; memcpy(&f, &u, 4); return f; }}
static uint32_t to_bits(float f) {{ uint32_t u; memcpy(&u, &f, 4); return u; }}
static long checked, bad_special, bad_normal, bad_subnormal, bad_tolerance;
static double worst_normal, worst_subnormal;
static uint32_t worst_normal_x, worst_subnormal_x, first_bad_x;
static int have_bad;
static void fail(uint32_t x) {{ if (!have_bad) {{ have_bad = 1; first_bad_x = x; }} }}
static void check(float x) {{
  const float got = ix_expf(x);
  const uint32_t xb = to_bits(x);
  checked++;
  if (isnan(x)) {{ if (!isnan(got)) {{ bad_special++; fail(xb); }} return; }}
  if (isinf(x)) {{
    if (x > 0 ? !(isinf(got) && got > 0) : got != 0.0f) {{ bad_special++; fail(xb); }}
    return;
  }}
  const double want = exp((double)x);
  /* The result's rounding to f32: above FLT_MAX + half an ulp it is inf. */
  if (want >= 0x1.ffffffp127) {{ if (!(isinf(got) && got > 0)) {{ bad_special++; fail(xb); }} return; }}
  if (isnan(got) || got < 0) {{ bad_special++; fail(xb); return; }}
  /* inf counts as 2^128 (the next power of two past FLT_MAX), so near the edge it is an
     error of about half an ulp. */
  const double g = isinf(got) ? 0x1p128 : (double)got;
  if (want >= 0x1p-126) {{
    int e; frexp(want, &e);
    const double ulps = fabs(g - want) / ldexp(1.0, e - 24);
    if (ulps > worst_normal) {{ worst_normal = ulps; worst_normal_x = xb; }}
    if (ulps > 1.0) {{ bad_normal++; fail(xb); }}
  }} else {{
    const double ulps = fabs(g - want) / 0x1p-149;
    if (ulps > worst_subnormal) {{ worst_subnormal = ulps; worst_subnormal_x = xb; }}
    if (ulps > 1.0) {{ bad_subnormal++; fail(xb); }}
  }}
  /* gpu::reference::matches at the elementwise f32 tolerance. */
  if (!(g == want || fabs(g - want) <= 1e-6 * fmax(fabs(want), 1.0))) {{ bad_tolerance++; fail(xb); }}
}}
int main(void) {{
  /* A stride through every bit pattern (509 is odd: every low-bit pattern comes up). */
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 509) check(from_bits((uint32_t)u));
  /* Every input from -104 to -87: subnormal results, and the edge where they round to 0. */
  for (uint32_t u = to_bits(-87.0f); u <= to_bits(-104.0f); ++u) check(from_bits(u));
  /* Around the overflow edge (ln FLT_MAX = 88.7228...) and around 0. */
  for (uint32_t u = to_bits(88.6f); u <= to_bits(88.8f); ++u) check(from_bits(u));
  for (uint32_t u = 0; u <= 0x01000000u; u += 13) {{ check(from_bits(u)); check(from_bits(u | 0x80000000u)); }}
  const uint32_t special[] = {{ 0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u,
    0xFFC00000u, 0x7F800001u, 0x7FC00001u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu,
    0x00800000u, 0x80800000u, 0x00000001u, 0x80000001u, 0x42B17218u, 0x42B17217u, 0xC2CFF1B5u,
    0xC2CFF1B4u, 0xC2AEAC50u, 0x3F000000u, 0xBF000000u, 0x3F317218u, 0xBF317218u }};
  for (unsigned k = 0; k < sizeof special / sizeof special[0]; ++k) check(from_bits(special[k]));
#ifdef IX_EXPF_FMA
  const char *form = "fma";
#else
  const char *form = "plain";
#endif
  printf("form %s checked %ld bad_special %ld bad_normal %ld bad_subnormal %ld bad_tolerance %ld "
         "worst_normal %.4f at %a worst_subnormal %.4f at %a first_bad %08x\n",
         form, checked, bad_special, bad_normal, bad_subnormal, bad_tolerance,
         worst_normal, from_bits(worst_normal_x), worst_subnormal, from_bits(worst_subnormal_x),
         have_bad ? first_bad_x : 0u);
  return 0;
}}
"#
    )
}

fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

/// Compiles the sweep with `flags` and runs it: its report line.
fn sweep(dir: &Path, tag: &str, flags: &[&str]) -> Option<String> {
    let c = dir.join(format!("expf_{tag}.c"));
    let exe = dir.join(format!("expf_{tag}"));
    std::fs::write(&c, program()).expect("write the C source");
    let mut cmd = Command::new(cc());
    cmd.args(["-O3", "-fno-trapping-math", "-std=c11"])
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(&c)
        .arg("-lm");
    let out = cmd.output().expect("run cc");
    if !out.status.success() {
        // A compiler that does not know a flag (-mno-fma off x86): that form is not checked.
        eprintln!(
            "{tag}: cc failed, skipped: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    let run = Command::new(&exe).output().expect("run the sweep");
    assert!(run.status.success(), "{tag}: the sweep failed: {run:?}");
    Some(String::from_utf8_lossy(&run.stdout).trim().to_string())
}

/// The value after `key` in a report line.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let mut words = line.split_whitespace();
    while let Some(w) = words.next() {
        if w == key {
            return words.next().unwrap_or("");
        }
    }
    panic!("no {key} in {line}")
}

#[test]
fn ix_expf_is_within_an_ulp_of_libm_exp() {
    if !ixmap::transcript::requirement_met("cc") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ixmap-expf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut forms = vec![];
    for (tag, flags) in [
        ("native", vec!["-march=native"]),
        ("nofma", vec!["-march=native", "-mno-fma"]),
        ("baseline", vec![]),
    ] {
        let Some(line) = sweep(&dir, tag, &flags) else {
            continue;
        };
        eprintln!("{tag}: {line}");
        let checked: u64 = field(&line, "checked").parse().expect("count");
        assert!(checked > 13_000_000, "{tag}: {line}");
        for key in [
            "bad_special",
            "bad_normal",
            "bad_subnormal",
            "bad_tolerance",
        ] {
            assert_eq!(field(&line, key), "0", "{tag}: {key}: {line}");
        }
        forms.push(field(&line, "form").to_string());
    }
    let _ = std::fs::remove_dir_all(&dir);
    // On x86-64 the baseline build has no FMA: the plain form is checked there.
    if cfg!(target_arch = "x86_64") {
        assert!(forms.iter().any(|f| f == "plain"), "{forms:?}");
    }
    assert!(!forms.is_empty());
}
