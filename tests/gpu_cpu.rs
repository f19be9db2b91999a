//! The CPU backend against the reference on small fusions of each kind: elementwise through
//! a reshape, transpose, broadcast, row and column reduction; simplified and naive agree.

#[path = "common/gpu_specs.rs"]
mod specs;

use ixmap::gpu::bench::{self, Device, Options};
use ixmap::gpu::spec::KernelSpec;
use specs::*;

fn all_kinds() -> Vec<KernelSpec> {
    vec![
        reshape_add(3, 5, 8),
        transpose(33, 70),
        broadcast_mul(9, 13),
        reduce(7, 45, true),
        reduce(45, 7, false),
    ]
}

#[test]
fn every_kind_matches_the_reference_simplified_and_naive() {
    let opts = Options {
        device: Device::Cpu,
        reps: 1,
        warmups: 0,
        progress: false,
        ..Default::default()
    };
    for spec in all_kinds() {
        let o =
            bench::run(&spec, &opts, true, false).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
        assert_eq!(o.variants.len(), 2);
        assert!(o.variants.iter().all(|v| v.verified));
    }
}

/// The CUDA source parses as C++ once the CUDA keywords are declared (no nvcc here).
#[test]
fn cuda_source_is_cplusplus() {
    use ixmap::gpu::launch::{choose, LaunchConfig};
    let prelude = "#define __global__\n#define __device__\n#define __shared__ static\n#define __restrict__\n#define __launch_bounds__(n)\nstruct D { long long x, y, z; }; static D threadIdx, blockIdx;\nstatic void __syncthreads() {}\nstatic float __shfl_down_sync(unsigned, float v, int) { return v; }\n#include <math.h>\n#include <stdint.h>\n";
    let Ok(out) = std::process::Command::new("c++").arg("--version").output() else {
        return;
    };
    if !out.status.success() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ixmap-cuda-syntax-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for spec in all_kinds() {
        for tiled in [None, Some(false)] {
            let cfg = LaunchConfig {
                block: 128,
                vector: if spec.name == "reshape_add" { 2 } else { 1 },
                unroll: 1,
                ..Default::default()
            };
            let launch = choose(&spec, cfg, tiled).expect("launch");
            for naive in [false, true] {
                let e = ixmap::gpu::emit::cuda::emit(&spec, &launch, naive).expect("emits");
                let path = dir.join("k.cpp");
                // The kernel declares int64_t itself for NVRTC; the host header declares it here.
                let body = e
                    .source
                    .replace("typedef long long int64_t;\ntypedef int int32_t;\n", "");
                std::fs::write(&path, format!("{prelude}{body}")).expect("write");
                let r = std::process::Command::new("c++")
                    .args(["-fsyntax-only", "-Wall"])
                    .arg(&path)
                    .output()
                    .expect("c++ runs");
                assert!(
                    r.status.success(),
                    "{} naive={naive}:\n{}\n{}",
                    spec.name,
                    String::from_utf8_lossy(&r.stderr),
                    e.source
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cpu_matches_reference() {
    let opts = Options {
        device: Device::Cpu,
        reps: 1,
        warmups: 0,
        progress: false,
        ..Default::default()
    };
    let spec = reshape_add(3, 5, 8);
    let o = bench::run(&spec, &opts, true, false).expect("runs and verifies");
    assert_eq!(o.variants.len(), 2);
    assert!(o.variants.iter().all(|v| v.verified));
}

#[test]
fn print_sources() {
    if std::env::var("IXMAP_SHOW").is_ok() {
        let spec = reshape_add(3, 5, 8);
        for naive in [false, true] {
            println!(
                "{}",
                ixmap::gpu::emit::cpu::emit(&spec, naive)
                    .expect("emits")
                    .source
            );
        }
    }
}
