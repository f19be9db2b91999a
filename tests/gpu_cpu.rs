//! The CPU backend against the reference on small fusions of each kind: elementwise through
//! a reshape, transpose, broadcast, row and column reduction; simplified and naive agree.

#[path = "common/gpu_specs.rs"]
#[allow(dead_code)] // the shared specs; this test runs the kinds of `all_kinds`
mod specs;
#[path = "common/cpu_verify.rs"]
mod verify;

use ixmap::gpu::spec::KernelSpec;
use specs::*;
use verify::assert_verified_on_cpu;

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
    for spec in all_kinds() {
        assert_verified_on_cpu(&spec);
    }
}

/// The CUDA source parses as C++ once the CUDA keywords are declared (no nvcc here).
#[test]
fn cuda_source_is_cplusplus() {
    use ixmap::gpu::launch::{choose, LaunchConfig};
    let prelude = "#define __global__\n#define __device__\n#define __shared__ static\n#define __restrict__\n#define __launch_bounds__(n)\n#ifndef __clang__\n#define __builtin_assume(c) ((void)0)\n#endif\nstruct D { long long x, y, z; }; static D threadIdx, blockIdx;\nstatic void __syncthreads() {}\nstatic float __shfl_down_sync(unsigned, float v, int) { return v; }\n#include <math.h>\n#include <stdint.h>\n";
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
    assert_verified_on_cpu(&reshape_add(3, 5, 8));
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
