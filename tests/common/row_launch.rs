//! The row normalization launch the row tests ask for by its warps a row, rows a block and
//! elements a lane reads at a time.

use ixmap::gpu::launch::{self, Launch, LaunchConfig, Strategy};
use ixmap::gpu::spec::KernelSpec;

/// The row normalization launch with `w` warps a row, `rpb` rows a block, `vector`
/// elements a lane at a time (halved until it divides the row).
pub fn launch_with(s: &KernelSpec, w: i64, rpb: i64, vector: i64) -> Launch {
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
    let l = launch::row_normalization_launch_with(s, cfg, w)
        .expect("launches")
        .expect("a row normalization");
    assert_eq!(l.strategy, Strategy::RowNormalization);
    assert_eq!(l.row_threads, 32 * w, "{}", l.describe());
    assert_eq!(l.block[0], 32 * w * rpb);
    l
}
