//! A kernel spec from HLO text, as a session defines it, and the scalar computations
//! (`addf`, `maxf`) that reductions apply.

use ixmap::gpu::spec::KernelSpec;
use ixmap::hlo::workspace::Target;

/// The kernel spec of computation `name` defined by `src` (panics where it does not
/// define and adapt: the test's own text).
pub fn spec(src: &str, name: &str) -> KernelSpec {
    let mut s = ixmap::Session::new();
    for o in s.execute(src) {
        assert!(o.result.is_ok(), "{:?}\n{src}", o.result);
    }
    let Some(Target::Computation(c)) = s.hlo.resolve(name) else {
        panic!("{name} is defined")
    };
    ixmap::gpu::from_hlo::from_computation(&s.hlo.module, c).expect("adapts")
}

/// `addf` and `maxf`, f32.
pub const OPS: &str = "addf {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nmaxf {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT m = f32[] maximum(a, b)\n}\n";

/// Computation `n`: a layer norm of the `r` rows of `f32[r, c]` `x`, scaled by `g`
/// (`f32[c]`), its mean and variance reduced by [`OPS`]' `addf`.
pub fn layer_norm_text(r: i64, c: i64) -> String {
    let inv = 1.0 / c as f64;
    format!(
        "n {{\n  x = f32[{r},{c}] parameter(0)\n  g = f32[{c}] parameter(1)\n  z = f32[] constant(0)\n  \
         s = f32[{r}] reduce(x, z), dimensions={{1}}, to_apply=addf\n  \
         kk = f32[] constant({inv})\n  kb = f32[{r}] broadcast(kk), dimensions={{}}\n  \
         m = f32[{r}] multiply(s, kb)\n  mb = f32[{r},{c}] broadcast(m), dimensions={{0}}\n  \
         d = f32[{r},{c}] subtract(x, mb)\n  sq = f32[{r},{c}] multiply(d, d)\n  \
         v = f32[{r}] reduce(sq, z), dimensions={{1}}, to_apply=addf\n  \
         vm = f32[{r}] multiply(v, kb)\n  e = f32[] constant(1e-05)\n  \
         eb = f32[{r}] broadcast(e), dimensions={{}}\n  ve = f32[{r}] add(vm, eb)\n  \
         q = f32[{r}] rsqrt(ve)\n  qb = f32[{r},{c}] broadcast(q), dimensions={{0}}\n  \
         nn = f32[{r},{c}] multiply(d, qb)\n  gb = f32[{r},{c}] broadcast(g), dimensions={{1}}\n  \
         ROOT y = f32[{r},{c}] multiply(nn, gb)\n}}\n"
    )
}

/// Computation `n`: an RMS norm of the `r` rows of `bf16[r, c]` `x` in f32, scaled by `g`
/// (`bf16[c]`), its sum of squares reduced by [`OPS`]' `addf`.
pub fn rms_bf16_text(r: i64, c: i64) -> String {
    let inv = 1.0 / c as f64;
    format!(
        "n {{\n  x = bf16[{r},{c}] parameter(0)\n  g = bf16[{c}] parameter(1)\n  \
         xf = f32[{r},{c}] convert(x)\n  sq = f32[{r},{c}] multiply(xf, xf)\n  z = f32[] constant(0)\n  \
         s = f32[{r}] reduce(sq, z), dimensions={{1}}, to_apply=addf\n  \
         kk = f32[] constant({inv})\n  kb = f32[{r}] broadcast(kk), dimensions={{}}\n  \
         m = f32[{r}] multiply(s, kb)\n  e = f32[] constant(1e-06)\n  \
         eb = f32[{r}] broadcast(e), dimensions={{}}\n  me = f32[{r}] add(m, eb)\n  \
         q = f32[{r}] rsqrt(me)\n  qb = f32[{r},{c}] broadcast(q), dimensions={{0}}\n  \
         nn = f32[{r},{c}] multiply(xf, qb)\n  gf = f32[{c}] convert(g)\n  \
         gb = f32[{r},{c}] broadcast(gf), dimensions={{1}}\n  y = f32[{r},{c}] multiply(nn, gb)\n  \
         ROOT o = bf16[{r},{c}] convert(y)\n}}\n"
    )
}
