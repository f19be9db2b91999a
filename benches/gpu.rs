//! CPU figures for issue 5: simplified vs naive index arithmetic on fusions of at least
//! 64 MiB (elementwise after a reshape, transpose, broadcast), each verified element by
//! element against the reference, timed against memcpy of the same bytes in the same run.
//!
//! cargo bench --bench gpu            (IXMAP_BENCH_REPS=N to change the repetitions)

#[path = "../tests/common/gpu_specs.rs"]
#[allow(dead_code)]
mod specs;

use ixmap::gpu::bench::{run, Device, Options};

fn main() {
    let reps = std::env::var("IXMAP_BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let opts = Options {
        device: Device::Cpu,
        reps,
        warmups: 2,
        progress: true,
    };
    let cases = [
        (
            "elementwise after reshape f32[64,256,1024] -> [16384,1024]",
            specs::reshape_add(64, 256, 1024),
        ),
        ("transpose f32[4096,4096]", specs::transpose(4096, 4096)),
        (
            "broadcast multiply f32[16384,1024] * f32[1024]",
            specs::broadcast_mul(16384, 1024),
        ),
    ];
    println!(
        "{:<58} {:>12} {:>12} {:>8} {:>10} {:>10}",
        "fusion", "simplified", "naive", "speedup", "% memcpy", "naive %"
    );
    for (label, spec) in cases {
        match run(&spec, &opts, true, false) {
            Ok(o) => {
                let s = &o.variants[0].timing;
                let n = &o.variants[1].timing;
                println!(
                    "{:<58} {:>9.2} ms {:>9.2} ms {:>7.2}x {:>9.1}% {:>9.1}%   ({} MiB moved, memcpy {:.2} ms, {})",
                    label,
                    s.median_s * 1e3,
                    n.median_s * 1e3,
                    n.median_s / s.median_s,
                    o.copy_pct(s),
                    o.copy_pct(n),
                    o.bytes >> 20,
                    o.copy.median_s * 1e3,
                    o.device
                );
            }
            Err(e) => println!("{label}: error: {e}"),
        }
    }
}
