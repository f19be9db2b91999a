//! Benchmarks: run an emitted kernel on inputs with known contents, check every output
//! element against the [reference](super::reference), and time it against a copy of the
//! same number of bytes measured in the same run.
//!
//! A mismatch is an error, never a figure. Timing: warm-ups, then `reps` rounds on a
//! monotonic clock (CPU) or CUDA events (GPU); median, min and max are reported, with the
//! effective bandwidth (bytes read + written per second) and its percentage of the copy's.
//!
//! On the CPU the variants and the copy are timed *interleaved*: each round runs every one
//! of them once (in a rotating order), so a slow spell of a shared machine falls on all of
//! them alike. A comparison is the median of the per-round ratios with a distribution-free
//! confidence interval ([`Ratio`]); a variant is called faster or slower only when the
//! interval excludes 1. A sample that would be shorter than [`MIN_SAMPLE_S`] times several
//! calls and divides, so no time is below the clock's resolution.

pub mod cpu;
pub mod cuda;
pub mod gemm;
pub mod measure;

use super::reference::{matches, read_scalar, Reference, Scalar, Vague};
use super::spec::{Body, ElemType, KernelSpec, Root};
use crate::MapError;

/// Where to run.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Device {
    Auto,
    Gpu,
    Cpu,
}

#[derive(Clone, Debug)]
pub struct Options {
    pub device: Device,
    pub reps: usize,
    pub warmups: usize,
    /// Show a progress bar (only on a terminal).
    pub progress: bool,
    /// The GPU launch (block, vector, unroll) and whether to tile transposes.
    pub config: super::launch::LaunchConfig,
    pub tiled: Option<bool>,
    /// CPU threads for the kernels (0: every core).
    pub threads: usize,
    /// GPU: time with the data cache-resident (one set of buffers) instead of reading
    /// device memory on every launch.
    pub hot: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            device: Device::Auto,
            reps: 10,
            warmups: 2,
            progress: false,
            config: Default::default(),
            tiled: None,
            threads: 0,
            hot: false,
        }
    }
}

/// Timings of one kernel variant: seconds per call.
#[derive(Clone, Debug, PartialEq)]
pub struct Timing {
    pub median_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    /// Seconds per call in each round, in the order measured (for paired ratios).
    pub samples: Vec<f64>,
}

impl Timing {
    pub fn from_samples(samples: Vec<f64>) -> Timing {
        let mut s = samples.clone();
        s.sort_by(|a, b| a.total_cmp(b));
        let n = s.len();
        let median = if n == 0 {
            0.0
        } else if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        };
        Timing {
            median_s: median,
            min_s: s.first().copied().unwrap_or(0.0),
            max_s: s.last().copied().unwrap_or(0.0),
            samples,
        }
    }
}

/// The least confidence of an interval that may call a variant faster or slower.
pub const MIN_CONFIDENCE: f64 = 0.9;

/// The shortest sample timed: a call shorter than this is repeated within the sample.
pub const MIN_SAMPLE_S: f64 = 1e-3;

/// Milliseconds with at least three significant digits (`12.3`, `0.0456`), never `0.000`
/// for a time that is not zero.
pub fn ms(s: f64) -> String {
    let v = s * 1e3;
    if !(v.is_finite()) || v == 0.0 || v >= 100.0 {
        return format!("{v:.1}");
    }
    if v.abs() < 1e-9 {
        return format!("{v:.2e}");
    }
    // Digits after the point so that three significant digits show.
    let digits = (2.0 - v.abs().log10().floor()).clamp(1.0, 12.0) as usize;
    format!("{v:.digits$}")
}

/// How much faster a variant is than a baseline: the median over rounds of
/// `baseline time / variant time` (same round), with the interval between two order
/// statistics of those ratios that holds the true median with probability `confidence`
/// (the sign-test interval: no assumption about the distribution of the noise).
#[derive(Clone, Debug, PartialEq)]
pub struct Ratio {
    pub median: f64,
    pub lo: f64,
    pub hi: f64,
    pub confidence: f64,
    pub rounds: usize,
}

impl Ratio {
    /// From per-round times of the baseline and of the variant (paired by round).
    pub fn paired(baseline: &[f64], variant: &[f64]) -> Option<Ratio> {
        let mut r: Vec<f64> = baseline
            .iter()
            .zip(variant)
            .filter(|(_, &v)| v > 0.0)
            .map(|(b, v)| b / v)
            .collect();
        if r.is_empty() {
            return None;
        }
        r.sort_by(|a, b| a.total_cmp(b));
        let n = r.len();
        let median = if n % 2 == 1 {
            r[n / 2]
        } else {
            (r[n / 2 - 1] + r[n / 2]) / 2.0
        };
        // The largest j with P(Binomial(n, 1/2) < j) <= 2.5%: [r_(j), r_(n+1-j)] (1-based)
        // covers the median with probability 1 - 2 P(B < j). With few rounds, j = 1 (min
        // to max) and the confidence is what it is.
        let pmf = |k: usize| -> f64 {
            let mut c = 1.0f64;
            for i in 0..k {
                c = c * (n - i) as f64 / (i + 1) as f64;
            }
            c * 0.5f64.powi(n as i32)
        };
        let mut j = 1usize;
        let mut below = pmf(0); // P(B < 1)
        while j < n / 2 && below + pmf(j) <= 0.025 {
            below += pmf(j);
            j += 1;
        }
        Some(Ratio {
            median,
            lo: r[j - 1],
            hi: r[n - j],
            confidence: 1.0 - 2.0 * below,
            rounds: n,
        })
    }

    /// Whether the interval lies wholly above 1 (faster), below (slower), or contains it;
    /// an interval of less than [`MIN_CONFIDENCE`] (under 5 rounds) decides nothing.
    pub fn verdict(&self) -> std::cmp::Ordering {
        if self.confidence < MIN_CONFIDENCE {
            std::cmp::Ordering::Equal
        } else if self.lo > 1.0 {
            std::cmp::Ordering::Greater
        } else if self.hi < 1.0 {
            std::cmp::Ordering::Less
        } else {
            std::cmp::Ordering::Equal
        }
    }

    /// `2.31x faster` or `1.35x slower` (a ratio below 1 reads as slower).
    pub fn factor(&self) -> String {
        if self.median >= 1.0 {
            format!("{:.2}x faster", self.median)
        } else {
            format!("{:.2}x slower", 1.0 / self.median)
        }
    }

    /// `2.31x faster (95% CI 2.20 to 2.40, 10 rounds interleaved)`, or, when the interval
    /// contains 1, `no clear difference (1.02x faster; 95% CI 0.97 to 1.08, ...)`. The
    /// interval is in the factor's own terms: `1.25x slower (95% CI 1.20 to 1.31, ...)`,
    /// not the speed-up's 0.76 to 0.83 beside a factor of 1.25.
    pub fn describe(&self) -> String {
        let (lo, hi) = if self.median >= 1.0 {
            (self.lo, self.hi)
        } else {
            (
                1.0 / self.hi.max(f64::MIN_POSITIVE),
                1.0 / self.lo.max(f64::MIN_POSITIVE),
            )
        };
        let ci = format!(
            "{:.0}% CI {:.2} to {:.2}, {} round{} interleaved",
            self.confidence * 100.0,
            lo,
            hi,
            self.rounds,
            if self.rounds == 1 { "" } else { "s" }
        );
        match self.verdict() {
            std::cmp::Ordering::Equal if self.confidence < MIN_CONFIDENCE => format!(
                "too few rounds to tell ({}; {ci}; 5 rounds or more give a 90% interval)",
                self.factor()
            ),
            std::cmp::Ordering::Equal => {
                format!("no clear difference ({}; {ci})", self.factor())
            }
            _ => format!("{} ({ci})", self.factor()),
        }
    }
}

/// The measured result of one variant (simplified or naive).
#[derive(Clone, Debug)]
pub struct Measured {
    pub label: String,
    pub timing: Timing,
    pub verified: bool,
    pub compile_s: f64,
    /// What the compiled code is (a GPU kernel's PTX instructions, registers and spills),
    /// shown on its own line, not in the label.
    pub code: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Outcome {
    pub device: String,
    pub bytes: u64,
    pub copy: Timing,
    pub variants: Vec<Measured>,
    /// How the samples were taken, when it is not the CPU's interleaved rounds.
    pub method: Option<String>,
}

impl Outcome {
    pub fn gbps(&self, t: &Timing) -> f64 {
        if t.median_s > 0.0 {
            self.bytes as f64 / t.median_s / 1e9
        } else {
            0.0
        }
    }
    pub fn copy_pct(&self, t: &Timing) -> f64 {
        if t.median_s > 0.0 {
            self.copy.median_s / t.median_s * 100.0
        } else {
            0.0
        }
    }
}

/// The reference's value of one output, element by element in physical order, and, for a
/// float sum at the root of the output's function, how far each element may be from it
/// because the kernel adds the terms in another order ([`sum_slack`]). An element the
/// tolerance and the slack reject is checked once more against a rounding bound carried
/// through the reference's computation of it ([`Reference::ball`]), from the spec and the
/// inputs kept here.
pub struct Expected<'a> {
    pub values: Vec<Scalar>,
    pub slack: Option<Vec<f64>>,
    spec: &'a KernelSpec,
    inputs: &'a [Vec<u8>],
    /// The interpreter the bounds are computed by, made at the first rejected element.
    bounds: std::cell::OnceCell<Option<Reference<'a>>>,
}

impl<'a> Expected<'a> {
    fn new(
        spec: &'a KernelSpec,
        inputs: &'a [Vec<u8>],
        values: Vec<Scalar>,
        slack: Option<Vec<f64>>,
    ) -> Expected<'a> {
        Expected {
            values,
            slack,
            spec,
            inputs,
            bounds: std::cell::OnceCell::new(),
        }
    }

    /// The interpreter the bounds are computed by, made the first time one is asked for.
    fn interpreter(&self) -> Option<&Reference<'a>> {
        self.bounds
            .get_or_init(|| Reference::new(self.spec, self.inputs).ok())
            .as_ref()
    }

    /// Whether `got`, element `i` (physical offset) of output `k`, lies within the rounding
    /// bound of the reference's computation of it ([`Reference::output_ball`]); false
    /// where no bound is carried, where it is unbounded, and where it rests on a sum whose
    /// order alone may move it by its terms' magnitudes (such a bound checks nothing).
    fn within_bound(&self, k: usize, i: usize, elem: ElemType, got: f64) -> bool {
        match self.interpreter() {
            Some(r) => {
                matches!(r.output_ball(k, i), Ok(Some(b)) if b.vague.is_none() && b.holds(elem, got))
            }
            None => false,
        }
    }
}

impl Expected<'_> {
    /// Why element `i` of output `k` cannot be checked against one reference, where the HLO
    /// leaves it undetermined ([`Vague`]): a sum whose order alone may move it without
    /// useful bound feeds it (16-bit accumulation of many terms: the reference's order and
    /// the kernel's are both correct), what follows float sums magnifies their orders'
    /// difference without bound ([`Reference::unbounded_by_order`]), or a reduction whose
    /// initial value is not an identity of its reducer; else `None`.
    pub fn why_undetermined(&self, k: usize, i: usize) -> Option<String> {
        let r = self.interpreter()?;
        let ball = r.output_ball(k, i).ok()??;
        if ball.vague.is_none() && r.unbounded_by_order(k, i).ok()? {
            return Some("it depends on float sums that the reference adds in one order and the kernel in another, and what it computes from them magnifies their difference without bound (bounded for one order, it is unbounded across orders, as an rsqrt of a variance that another order may bring near 0 is), so no check against one order can tell a correct kernel from a wrong one here".into());
        }
        Some(match ball.vague? {
            Vague::Order { n, t } => {
                let factor = super::reference::order_factor(n, t);
                // the bound past 1 only says "as much as the terms' magnitudes": a stalled
                // sum is off by nearly all of them, and none by much more
                let factor = if factor < 1000.0 {
                    format!("{factor:.3}")
                } else {
                    format!("{factor:.3e}")
                };
                format!(
                    "it depends on a sum of {n} terms accumulated in {}, which the reference adds in one order and the kernel in another; in {} the order alone may move such a sum by as much as the sum of its terms' magnitudes (the any-order bound is {factor} times it), so no check against one order can tell a correct kernel from a wrong one here",
                    t.hlo_name(),
                    t.hlo_name()
                )
            }
            Vague::Init { op, init, t } => format!(
                "it depends on a reduction whose initial value {} is not an identity of `{}`, which XLA's semantics leave undefined: the reference applies it once, and the kernel, as XLA's GPU kernels do, once for each partial result it starts; with {} as the initial value the check can decide",
                if t == ElemType::Pred {
                    (init != 0.0).to_string()
                } else {
                    Scalar::from_f64(t, init).to_string()
                },
                op.hlo_name(),
                identity_text(op, t)
            ),
        })
    }
}

/// The identity of a reducer whose initial value can be wrong ([`Vague::Init`]), as HLO
/// writes it.
fn identity_text(op: super::spec::BinOp, t: ElemType) -> &'static str {
    use super::spec::BinOp;
    match (op, t) {
        (BinOp::Mul, _) => "1",
        (_, ElemType::Pred) => "false",
        (_, t) if t.is_float() => "0 (or -0)",
        _ => "0",
    }
}

impl std::fmt::Debug for Expected<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expected")
            .field("values", &self.values)
            .field("slack", &self.slack)
            .finish()
    }
}

impl std::ops::Deref for Expected<'_> {
    type Target = [Scalar];
    fn deref(&self) -> &[Scalar] {
        &self.values
    }
}

/// Checks every element of `out` (raw bytes in the output's layout) against `want`.
pub fn verify(spec: &KernelSpec, out: &[u8], want: &Expected) -> Result<(), MapError> {
    match first_mismatch(spec, 0, out, want) {
        None => Ok(()),
        Some((i, got, w)) => Err(match want.why_undetermined(0, i) {
            Some(why) => MapError::Undetermined(format!(
                "output element {i} (physical offset) is {got} but the reference says {w}: {why}; unverified, so it has no timing"
            )),
            None => MapError::Other(format!(
                "output element {i} (physical offset) is {got} but the reference says {w}: the kernel is wrong, so it has no timing"
            )),
        }),
    }
}

/// The unit roundoff of a float type (half the distance from 1 to the next value): the
/// largest relative error of one rounded operation.
pub fn unit_roundoff(t: ElemType) -> f64 {
    match t {
        ElemType::BF16 => 2f64.powi(-8),
        ElemType::F16 => 2f64.powi(-11),
        ElemType::F64 => 2f64.powi(-53),
        _ => 2f64.powi(-24),
    }
}

/// `(1 + u)^(n-1) - 1`: how far, relative to the sum of its terms' magnitudes, a sum of
/// `n` terms rounded with unit roundoff `u` may be from the exact sum, in any order
/// (Higham §4.2).
pub fn any_order_factor(n: f64, u: f64) -> f64 {
    ((n - 1.0).max(0.0) * u.ln_1p()).exp_m1()
}

/// How far a kernel's float sum may be from the reference's, per output element, given
/// [`Reference::sum_magnitudes`]' `[n, Σ|x_i|, Σ|ŝ_j|]` (the terms' count and magnitudes,
/// the magnitudes of the reference's partial sums) for a sum accumulated in `acc`, whose
/// terms may differ from the reference's by `terms` relative (a transcendental's last bits):
///
/// - the kernel's sum, in any order, within `((1 + u)^(n-1) - 1) Σ|x_i|` of the exact sum of
///   its terms (Higham, *Accuracy and Stability of Numerical Algorithms*, §4.2: each of the
///   `n - 1` additions rounds a partial sum whose magnitude is at most `Σ|x_i|` grown by
///   the earlier roundings; `u` the unit roundoff of `acc`);
/// - the reference's, its own order, within `u Σ|ŝ_j|` of the exact sum (the running
///   error bound, §4.2 again: the addition giving `ŝ_j` errs by at most `u |ŝ_j|`);
/// - the terms, within `terms Σ|x_i|` of each other.
///
/// Sound for every order of summation, and as tight as an order-blind bound can be: for a
/// bf16 sum of 512 terms (`u = 2^-8`) it exceeds `Σ|x_i|`, any order being that wrong at
/// worst, so such a check tells only grossly wrong sums; for f32 (`u = 2^-24`) it is
/// `3e-5 Σ|x_i|`.
pub fn sum_slack(magnitudes: &[[f64; 3]], acc: ElemType, terms: f64) -> Vec<f64> {
    let u = unit_roundoff(acc);
    magnitudes
        .iter()
        .map(|&[n, m, partial]| {
            let any_order = any_order_factor(n, u) * m;
            any_order + u * partial + terms * m
        })
        .collect()
}

/// The reference's outputs of `spec` on `inputs` (output 0, then a tuple root's further
/// outputs), each with its slack ([`sum_slack`]) where it is a float sum.
pub fn expected_outputs<'a>(
    spec: &'a KernelSpec,
    inputs: &'a [Vec<u8>],
) -> Result<Vec<Expected<'a>>, MapError> {
    let r = Reference::new(spec, inputs)?;
    r.outputs()?
        .into_iter()
        .enumerate()
        .map(|(k, values)| {
            let slack = slack_of(spec, &r, k)?;
            Ok(Expected::new(spec, inputs, values, slack))
        })
        .collect()
}

/// The slack of output `k` ([`sum_slack`]), `None` when it is not a float sum.
fn slack_of(spec: &KernelSpec, r: &Reference, k: usize) -> Result<Option<Vec<f64>>, MapError> {
    let Some(m) = r.sum_magnitudes(k)? else {
        return Ok(None);
    };
    let Some(acc) = accumulation(spec, k) else {
        return Ok(None);
    };
    // The terms as an elementwise output of their type would be checked.
    Ok(Some(sum_slack(
        &m,
        acc,
        tolerance(acc, None, reads_reductions(spec)),
    )))
}

/// The type a reduction computing output `k` accumulates in (f32 for
/// `convert(reduce(...))` of f16), `None` when output `k` is not a reduction (under an exact
/// epilogue: [`Body::under_exact_epilogue`]; output 0 a reduction of whole dimensions, not of
/// windows).
fn accumulation(spec: &KernelSpec, k: usize) -> Option<ElemType> {
    if k == 0 {
        if spec.root != Root::Elementwise {
            return None;
        }
        match spec.functions.first()?.body.under_exact_epilogue() {
            Body::Reduce { map, func, .. } if map.results.iter().all(|r| r.as_var().is_some()) => {
                Some(spec.function_elem(*func))
            }
            _ => None,
        }
    } else {
        let f = spec.functions.get(spec.more_outputs.get(k - 1)?.func)?;
        match f.body.under_exact_epilogue() {
            Body::Reduce { func, .. } => Some(spec.function_elem(*func)),
            _ => None,
        }
    }
}

/// Whether a function's body has a reduction (the root reduction included).
fn has_reduction(spec: &KernelSpec) -> bool {
    spec.functions.iter().any(|f| {
        let mut r = false;
        f.body.visit(&mut |b| r |= matches!(b, Body::Reduce { .. }));
        r
    })
}

/// Whether a reduction is read inside a function's body (softmax's max and sum), not only
/// at the root of an output's function: summed in another order too when a row's lanes
/// share it (the CUDA row normalization), which no slack covers.
fn reads_reductions(spec: &KernelSpec) -> bool {
    let roots: Vec<usize> = std::iter::once(0)
        .chain(spec.more_outputs.iter().map(|o| o.func))
        .collect();
    spec.functions.iter().enumerate().any(|(i, f)| {
        let mut b = &f.body;
        if roots.contains(&i) {
            b = b.under_exact_epilogue();
            // A root reduction's operand is a function of its own.
            if matches!(b, Body::Reduce { .. }) {
                return false;
            }
        }
        let mut r = false;
        b.visit(&mut |b| r |= matches!(b, Body::Reduce { .. }));
        r
    })
}

/// The relative tolerance of an output of type `elem` (relative to `max(|want|, 1)`):
/// `acc` the type a reduction computing it accumulates in, when it is one whose order is
/// not covered by a slack; `nested` when reductions are read inside the body (or any
/// reduction, without a slack). Floats: a
/// transcendental's last bits differ between libraries, a parallel reduction sums in
/// another order; for f16 and bf16 one unit in the last place of the type (an f32
/// difference may round the other way), more for a reduction that accumulates in the
/// 16-bit type. Integers and pred: exact (0).
fn tolerance(elem: ElemType, acc: Option<ElemType>, nested: bool) -> f64 {
    let in_16_bits = matches!(acc, Some(ElemType::F16 | ElemType::BF16));
    match (elem, acc.is_some() || nested) {
        (ElemType::F16, _) if in_16_bits => 2e-2,
        (ElemType::BF16, _) if in_16_bits => 1e-1,
        (ElemType::F16, _) => 1e-3,
        (ElemType::BF16, _) => 8e-3,
        (_, true) => 1e-4,
        _ => 1e-6,
    }
}

/// The first element of output `k` of `spec` (0, then a tuple root's further outputs),
/// read from `out` in physical order, that does not match the reference `want`: its
/// offset, the kernel's value and the reference's (as `f64`). A float element matches
/// within [`tolerance`] of the reference's value, plus its slack where `want` has one (a
/// float sum: then the order of the sum is covered by the slack, not the tolerance), or
/// within the rounding bound of the reference's computation of it ([`Reference::ball`]).
pub fn first_mismatch(
    spec: &KernelSpec,
    k: usize,
    out: &[u8],
    want: &Expected,
) -> Option<(usize, f64, f64)> {
    let elem = spec.outputs().get(k)?.elem;
    let tol = match want.slack {
        Some(_) => tolerance(elem, None, reads_reductions(spec)),
        None => tolerance(elem, accumulation(spec, k), has_reduction(spec)),
    };
    for (i, &w) in want.values.iter().enumerate() {
        let got = read_scalar(out, elem, i);
        let ok = if elem.is_float() {
            let slack = want.slack.as_ref().and_then(|s| s.get(i)).copied();
            let (g, w) = (got.to_f64(elem), w.to_f64(elem));
            matches(g, w, tol)
                || slack.is_some_and(|s| (g - w).abs() <= tol * w.abs().max(1.0) + s)
                || want.within_bound(k, i, elem, g)
        } else {
            got == w
        };
        if !ok {
            return Some((i, got.to_f64(elem), w.to_f64(elem)));
        }
    }
    None
}

/// The reference output of `spec` on `inputs`, in physical order, with its slack.
pub fn reference_output<'a>(
    spec: &'a KernelSpec,
    inputs: &'a [Vec<u8>],
) -> Result<Expected<'a>, MapError> {
    let r = Reference::new(spec, inputs)?;
    let values = r.output()?;
    let slack = slack_of(spec, &r, 0)?;
    Ok(Expected::new(spec, inputs, values, slack))
}

/// Runs `spec` (simplified, and naive when `with_naive`) on the chosen device.
pub fn run(
    spec: &KernelSpec,
    opts: &Options,
    with_naive: bool,
    naive_only: bool,
) -> Result<Outcome, MapError> {
    spec.single_output("bench")?;
    match opts.device {
        Device::Gpu => cuda::run(spec, opts, with_naive, naive_only),
        Device::Auto if cuda::available().is_ok() => cuda::run(spec, opts, with_naive, naive_only),
        Device::Auto | Device::Cpu => cpu::run(spec, opts, with_naive, naive_only),
    }
}

/// Times several callables interleaved: `opts.warmups` calls of each, then `opts.reps`
/// rounds, each running every callable once (sample) in an order that rotates by one each
/// round. A callable faster than [`MIN_SAMPLE_S`] is called several times per sample (the
/// same count every round) and its time divided. `progress(done, total)` after each sample.
pub fn interleave(
    opts: &Options,
    fns: &mut [&mut dyn FnMut()],
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Vec<Timing>, MapError> {
    use std::time::Instant;
    let n = fns.len();
    let mut calls = vec![1u64; n];
    for (k, f) in fns.iter_mut().enumerate() {
        for _ in 0..opts.warmups {
            f();
        }
        // Calibrate: how many calls make a sample of MIN_SAMPLE_S.
        let t = Instant::now();
        f();
        let one = t.elapsed().as_secs_f64();
        if one < MIN_SAMPLE_S {
            calls[k] = ((MIN_SAMPLE_S / one.max(1e-9)).ceil() as u64).clamp(1, 1 << 20);
        }
    }
    let reps = opts.reps.max(1);
    let total = (reps * n) as u64;
    let mut samples = vec![Vec::with_capacity(reps); n];
    for r in 0..reps {
        for j in 0..n {
            let k = (r + j) % n;
            if crate::interrupted() {
                return Err(MapError::Interrupted);
            }
            let t = Instant::now();
            for _ in 0..calls[k] {
                fns[k]();
            }
            samples[k].push(t.elapsed().as_secs_f64() / calls[k] as f64);
            progress((r * n + j + 1) as u64, total);
            crate::report_progress((r * n + j + 1) as u64, total, "timing rounds");
        }
    }
    Ok(samples.into_iter().map(Timing::from_samples).collect())
}
