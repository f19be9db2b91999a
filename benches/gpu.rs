//! CPU figures (issues 5 and 15): simplified vs naive index arithmetic on fusions of at
//! least 64 MiB (elementwise after a reshape, transpose, broadcast) and row softmaxes, each
//! verified element by element against the reference, timed interleaved (round by round)
//! with memcpy of the same bytes. The ratio is the median of per-round ratios with the sign
//! test's interval. For the side-by-side with XLA:CPU, see `benches/xla_cpu.sh`.
//!
//! cargo bench --bench gpu     (IXMAP_BENCH_REPS=N rounds, IXMAP_BENCH_THREADS=N threads)

#[path = "../tests/common/gpu_specs.rs"]
#[allow(dead_code)]
mod specs;

use ixmap::gpu::bench::{ms, run, Device, Options, Ratio};
use ixmap::gpu::spec::KernelSpec;

/// A row softmax f32[rows, cols] through the HLO adapter.
fn softmax(rows: i64, cols: i64) -> KernelSpec {
    let src = format!(
        "maxf {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}}
addf {{
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}}
softmax {{
  p0 = f32[{rows},{cols}] parameter(0)
  c = f32[] constant(-inf)
  mx = f32[{rows}] reduce(p0, c), dimensions={{1}}, to_apply=maxf
  b = f32[{rows},{cols}] broadcast(mx), dimensions={{0}}
  sub = f32[{rows},{cols}] subtract(p0, b)
  e = f32[{rows},{cols}] exponential(sub)
  z = f32[] constant(0)
  sum = f32[{rows}] reduce(e, z), dimensions={{1}}, to_apply=addf
  bs = f32[{rows},{cols}] broadcast(sum), dimensions={{0}}
  ROOT d = f32[{rows},{cols}] divide(e, bs)
}}"
    );
    let mut s = ixmap::Session::new();
    for o in s.execute(&src) {
        o.result.expect("the softmax HLO parses");
    }
    let Some(ixmap::hlo::workspace::Target::Computation(c)) = s.hlo.resolve("softmax") else {
        panic!("softmax is defined")
    };
    ixmap::gpu::from_hlo::from_computation(&s.hlo.module, c).expect("adapts")
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let opts = Options {
        device: Device::Cpu,
        reps: env("IXMAP_BENCH_REPS", 10),
        warmups: 2,
        progress: true,
        threads: env("IXMAP_BENCH_THREADS", 0),
        ..Default::default()
    };
    let cases = [
        (
            "add after reshape (no exp) f32[64,256,1024] -> [16384,1024]",
            specs::reshape_add_plain(64, 256, 1024),
        ),
        (
            "elementwise after reshape f32[64,256,1024] -> [16384,1024]",
            specs::reshape_add(64, 256, 1024),
        ),
        ("transpose f32[4096,4096]", specs::transpose(4096, 4096)),
        (
            "broadcast multiply f32[16384,1024] * f32[1024]",
            specs::broadcast_mul(16384, 1024),
        ),
        ("row softmax f32[4096,32]", softmax(4096, 32)),
        ("row softmax f32[4096,1024]", softmax(4096, 1024)),
    ];
    println!(
        "{:<62} {:>12} {:>12} {:>10}  simplified vs naive",
        "fusion", "simplified", "naive", "% memcpy"
    );
    for (label, spec) in cases {
        match run(&spec, &opts, true, false) {
            Ok(o) => {
                let s = &o.variants[0].timing;
                let n = &o.variants[1].timing;
                let r = Ratio::paired(&n.samples, &s.samples)
                    .map_or("not timed".to_string(), |r| r.describe());
                println!(
                    "{:<62} {:>9} ms {:>9} ms {:>9.1}%  {r}   ({} MiB moved, memcpy {} ms, {})",
                    label,
                    ms(s.median_s),
                    ms(n.median_s),
                    o.copy_pct(s),
                    o.bytes >> 20,
                    ms(o.copy.median_s),
                    o.device
                );
            }
            Err(e) => println!("{label}: error: {e}"),
        }
    }
}
