//! The row normalization launch the row tests ask for by its warps a row, rows a block,
//! elements a lane reads at a time and rows a thread.

use ixmap::gpu::launch::{self, Launch, LaunchConfig, Strategy};
use ixmap::gpu::spec::KernelSpec;

/// The row normalization launch with `w` warps a row, `rpb` rows a block, `vector`
/// elements a lane at a time (halved until it divides the row).
pub fn launch_with(s: &KernelSpec, w: i64, rpb: i64, vector: i64) -> Launch {
    launch_rows(s, w, rpb, vector, 1)
}

/// [`launch_with`], each thread taking `per` rows (Triton's layout: `rpb` row groups a
/// block, `rpb * per` rows).
#[allow(dead_code)]
pub fn launch_rows(s: &KernelSpec, w: i64, rpb: i64, vector: i64, per: i64) -> Launch {
    let cols = *s.output.dims.last().unwrap();
    let mut v = vector;
    while cols % v != 0 {
        v /= 2;
    }
    let cfg = LaunchConfig {
        block: 32 * w * rpb,
        vector: v,
        ..LaunchConfig::default()
    };
    let l = launch::row_normalization_launch_rows(s, cfg, w, per)
        .expect("launches")
        .expect("a row normalization");
    assert_eq!(l.strategy, Strategy::RowNormalization);
    assert_eq!(l.row_threads, 32 * w, "{}", l.describe());
    assert_eq!(l.block[0], 32 * w * rpb);
    let rows = s.output.dims[..s.output.dims.len() - 1]
        .iter()
        .product::<i64>();
    assert_eq!(l.rows_per_thread, per.min(rows), "{}", l.describe());
    l
}
