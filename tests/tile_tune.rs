//! Tuning on the CPU: the candidates are valid tilings (legal tiles, divisibility, runs of a
//! line), every tiled kernel is verified against the reference by the bench, and the ranking
//! has the default mapping measured in the same run.

#[path = "common/gpu_specs.rs"]
#[allow(dead_code)]
mod gpu_specs;

use ixmap::gpu::bench::Options;
use ixmap::tile::tune::{candidates, emit_tiled, tune};

fn quick() -> Options {
    Options {
        reps: 1,
        warmups: 0,
        ..Options::default()
    }
}

#[test]
fn transpose_candidates_are_valid_tilings() {
    let spec = gpu_specs::transpose(64, 128);
    let (good, rejected, _) = candidates(&spec, None, 0).expect("enumerates");
    assert!(!good.is_empty());
    for c in &good {
        assert!(c
            .sizes
            .iter()
            .zip(&spec.output.dims)
            .all(|(z, n)| n % z == 0));
        assert!(c.min_run >= 64, "{c:?}");
    }
    // A tile one column wide reads the transposed input 4 bytes at a time: filtered out.
    assert!(
        rejected
            .iter()
            .any(|r| r.sizes == vec![128, 1] || r.sizes == vec![64, 1]),
        "{rejected:?}"
    );
    assert!(good.iter().any(|c| c.sizes == vec![32, 32]));
}

#[test]
fn user_tile_sizes_restrict_the_candidates() {
    let spec = gpu_specs::transpose(64, 128);
    let (good, _, _) = candidates(&spec, Some(&[16, 32]), 0).expect("enumerates");
    for c in &good {
        assert!(
            c.sizes
                .iter()
                .zip(&spec.output.dims)
                .all(|(&z, &n)| z == 16 || z == 32 || z == n),
            "{c:?}"
        );
    }
}

#[test]
fn every_tiled_kernel_is_verified() {
    for spec in [
        gpu_specs::transpose(32, 64),
        gpu_specs::reshape_add(4, 8, 16),
        gpu_specs::broadcast_mul(16, 32),
        gpu_specs::reduce(16, 64, true),
    ] {
        let (good, rejected, _) = candidates(&spec, None, 6).expect("enumerates");
        let t = tune(&spec, &good, rejected, &quick(), &mut |_, _, _| {})
            .expect("every variant verifies");
        assert_eq!(t.rows.len(), good.len() + 1, "{}", spec.name);
        assert!(
            t.rows[0].sizes.is_none(),
            "the default mapping is measured first"
        );
    }
}

#[test]
fn tiled_source_loops_over_tiles_then_elements() {
    let spec = gpu_specs::transpose(64, 64);
    let e = emit_tiled(&spec, &[32, 16]).expect("divides");
    assert!(
        e.source
            .contains("for (int64_t tile0 = 0; tile0 < 2; ++tile0)"),
        "{}",
        e.source
    );
    assert!(
        e.source.contains("for (int64_t el1 = 0; el1 < 16; ++el1)"),
        "{}",
        e.source
    );
    assert!(emit_tiled(&spec, &[24, 16]).is_err());
}

#[test]
fn gpu_launch_candidates_keep_coalescing_no_worse_than_the_default() {
    use ixmap::tile::tune::launch_candidates;
    let spec = gpu_specs::broadcast_mul(64, 256);
    let (good, rejected) = launch_candidates(&spec, &[64, 128, 256], &[1, 2, 4]).expect("analyses");
    assert!(!good.is_empty());
    assert!(
        good.iter()
            .all(|c| c.config.block != 128 || c.config.vector != 1),
        "the default is measured separately"
    );
    assert_eq!(good.len() + rejected.len(), 8, "{good:?} {rejected:?}");
}

/// A mapping's tile runs through `bench`'s CPU path: the tiled loop nest, simplified and
/// naive, and the untiled loop, each verified against the reference on every element.
#[test]
fn tiled_kernels_verify_with_naive_and_simplified_indexing() {
    use ixmap::gpu::bench::cpu::run_kernels;
    use ixmap::gpu::emit::cpu::emit;
    use ixmap::tile::tune::emit_tiled_with;
    for (spec, tile) in [
        (gpu_specs::transpose(32, 64), vec![8, 16]),
        (gpu_specs::reshape_add(4, 8, 16), vec![8, 16]),
        (gpu_specs::broadcast_mul(16, 32), vec![4, 32]),
    ] {
        let naive = emit_tiled_with(&spec, &tile, true).expect("divides");
        assert!(
            naive.source.contains("(naive indexing)"),
            "{}",
            naive.source
        );
        let kernels = vec![
            (
                "tiled".to_string(),
                emit_tiled_with(&spec, &tile, false).expect("divides"),
            ),
            ("tiled naive".to_string(), naive),
            ("untiled".to_string(), emit(&spec, false).expect("emits")),
        ];
        let o = run_kernels(&spec, &quick(), kernels).expect("every variant verifies");
        assert_eq!(o.variants.len(), 3, "{}", spec.name);
        assert!(o.variants.iter().all(|v| v.verified));
    }
}
