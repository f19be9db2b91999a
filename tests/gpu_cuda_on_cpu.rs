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

/// XLA's launch strategies (issue 14, part 3), each run on the CPU and verified: the loop
/// with a capped grid (`chunk_id`) in 32- and 64-bit index arithmetic, and tiled
/// transposes of rank-3 and rank-4 permutations with several tiles in both tiled
/// dimensions and several blocks along the others.
#[test]
fn xla_launch_strategies_run_on_the_cpu_verified() {
    use ixmap::gpu::cuda_cpu::check_width;
    use ixmap::gpu::launch::{self, LaunchConfig, Strategy};
    if !has_cxx() {
        assert!(std::env::var("CI").is_err(), "CI and no C++ compiler");
        eprintln!("*** SKIPPED: no C++ compiler");
        return;
    }
    // The loop over a capped grid: 3 × 5 × 8 / 2 = 60 vectors on 2 blocks of 8 threads,
    // 4 chunks per thread (the last one partly off the end), in 32 and in 64 bits.
    let spec = specs::reshape_add(3, 5, 8);
    let cfg = LaunchConfig {
        block: 8,
        vector: 2,
        unroll: 1,
        max_blocks: 2,
    };
    let l = launch::loop_launch(&spec.output, cfg).expect("loop launch");
    assert_eq!((l.grid[0], l.chunks()), (2, 4));
    for (naive, wide) in [(false, false), (true, false), (false, true)] {
        let bits = check_width(&spec, &l, naive, wide)
            .unwrap_or_else(|e| panic!("capped loop naive={naive} wide={wide}: {e}"));
        assert_eq!(bits, if wide { 64 } else { 32 });
    }
    // Tiled transposes: (input dims, permutation), each with at least two tiles in both
    // tiled dimensions.
    for (dims, perm) in [
        (vec![3, 40, 70], vec![0, 2, 1]),
        (vec![40, 3, 70], vec![2, 1, 0]),
        (vec![70, 40, 3], vec![1, 0, 2]),
        (vec![2, 3, 35, 66], vec![0, 3, 1, 2]),
    ] {
        let spec = specs::permute(&dims, &perm);
        let l = launch::choose(&spec, LaunchConfig::default(), None).expect("launch");
        let tiled = perm.last() != Some(&(dims.len() - 1));
        assert_eq!(
            matches!(l.strategy, Strategy::TiledTranspose { .. }),
            tiled,
            "{}: {:?}",
            spec.name,
            l.strategy
        );
        for naive in [false, true] {
            check_width(&spec, &l, naive, naive)
                .unwrap_or_else(|e| panic!("{} naive={naive}: {e}", spec.name));
        }
    }
    // Reductions: rows of 16 read 4 at a time (4 lanes per row, 8 rows per warp), 2 at a
    // time (8 lanes), and rows of 45 (a warp per row); a column reduction through the
    // 32×32 tile with several blocks of columns and several tiles of rows.
    for (spec, vector, lanes) in [
        (specs::reduce(100, 16, true), 4, 4),
        (specs::reduce(40, 16, true), 2, 8),
        (specs::reduce(7, 45, true), 1, 32),
        (specs::reduce(70, 45, false), 1, 32),
    ] {
        let cfg = LaunchConfig {
            vector,
            ..Default::default()
        };
        let l = launch::choose(&spec, cfg, None).expect("reduction launch");
        assert_eq!(l.row_threads, lanes, "{} vector={vector}", spec.name);
        for naive in [false, true] {
            check_width(&spec, &l, naive, naive).unwrap_or_else(|e| {
                panic!(
                    "{} {:?} vector={vector} naive={naive}: {e}",
                    spec.name, l.strategy
                )
            });
        }
    }
}
