//! The emitted CUDA text runs on the CPU (issue 14, part 2): every emitter and launch
//! mapping, simplified and naive, on small shapes and on shapes with several blocks (and
//! several 32×32 tiles in both tiled dimensions), checked element by element against the
//! reference through `src/gpu/cuda_on_cpu.h`.

#[path = "common/gpu_specs.rs"]
mod specs;

use ixmap::gpu::cuda_cpu::check;
use ixmap::gpu::sweep;

fn has_cxx() -> bool {
    std::process::Command::new(ixmap::gpu::cuda_cpu::compiler())
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn every_cuda_mapping_runs_on_the_cpu_verified() {
    if !has_cxx() {
        assert!(std::env::var("CI").is_err(), "CI and no C++ compiler");
        eprintln!("*** SKIPPED: no C++ compiler");
        return;
    }
    let mut checked = Vec::new();
    for spec in [
        specs::reshape_add(3, 5, 8),
        specs::reshape_add_plain(4, 6, 8),
        specs::transpose(33, 70),
        specs::broadcast_mul(9, 13),
        specs::reduce(7, 45, true),
        specs::reduce(45, 7, false),
    ] {
        for (label, launch) in sweep::launches(&spec) {
            let launch = launch.unwrap_or_else(|e| panic!("{} {label}: {e}", spec.name));
            for naive in [false, true] {
                check(&spec, &launch, naive)
                    .unwrap_or_else(|e| panic!("{} {label} naive={naive}: {e}", spec.name));
                checked.push(format!(
                    "{} {} {label}{}",
                    spec.name,
                    launch.strategy.name(),
                    if naive { " naive" } else { "" }
                ));
            }
        }
    }
    for s in [
        "loop",
        "tiled transpose",
        "row reduction",
        "column reduction",
    ] {
        assert!(
            checked.iter().any(|c| c.contains(s)),
            "no {s} kernel among {checked:?}"
        );
    }
}
