//! `coalescing FUSION tile=(..)` (issue 14, part 3): the counts of `gpu::tile_coalescing`
//! checked against an independent brute force. Here every fusion's reads are written by
//! hand as index functions (not taken from the indexing maps), every *byte* a tile touches
//! is put in a set (addresses from a hand-computed layout), and the bytes, 64-byte
//! segments, ideal, shortest run and verdict are counted from that set.

use ixmap::gpu::spec::KernelSpec;
use ixmap::gpu::sweep;
use ixmap::gpu::tile_coalescing::{tiled_report, tiled_report_with, TileCount, Verdict};
use ixmap::Session;
use std::collections::BTreeSet;

const HLO: &str = "
addf {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ew {
  p0 = f32[24,40] parameter(0)
  p1 = f32[24,40] parameter(1)
  ROOT a = f32[24,40] add(p0, p1)
}
tr16 {
  t = f16[24,40] parameter(0)
  ROOT tr = f16[40,24] transpose(t), dimensions={1,0}
}
bcast {
  m = f32[24,40] parameter(0)
  v = f32[40] parameter(1)
  c = s8[24] parameter(2)
  cf = f32[24] convert(c)
  bv = f32[24,40] broadcast(v), dimensions={1}
  bc = f32[24,40] broadcast(cf), dimensions={0}
  s0 = f32[24,40] add(m, bv)
  ROOT s1 = f32[24,40] multiply(s0, bc)
}
colmajor {
  cm = f64[24,40]{0,1} parameter(0)
  ROOT n = f64[24,40] negate(cm)
}
rows {
  r = f32[24,40] parameter(0)
  z = f32[] constant(0)
  ROOT sum = f32[24] reduce(r, z), dimensions={1}, to_apply=addf
}
";

fn spec(name: &str) -> KernelSpec {
    let mut s = Session::new();
    for o in s.execute(HLO) {
        assert!(o.result.is_ok(), "{:?}", o.result);
    }
    sweep::spec_for(&s.hlo, name)
        .unwrap_or_else(|| panic!("{name} is defined"))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// An operand as the brute force sees it: element bytes, its strides in elements (written
/// by hand from the layout), and the elements one output index reads.
struct Operand {
    bytes: i64,
    strides: Vec<i64>,
    reads: Box<dyn Fn(&[i64]) -> Vec<Vec<i64>>>,
}

/// The counts, and the verdict by `rule`: XLA's (every contiguous run at least one 64-byte
/// transaction) or the ratio (at most twice the ideal transactions).
fn brute(op: &Operand, lo: &[i64], hi: &[i64], rule: Verdict) -> TileCount {
    let mut bytes: BTreeSet<i64> = BTreeSet::new();
    let mut reads = 0u64;
    let mut idx = lo.to_vec();
    loop {
        for e in (op.reads)(&idx) {
            reads += 1;
            let off: i64 = e.iter().zip(&op.strides).map(|(x, s)| x * s).sum();
            for b in 0..op.bytes {
                bytes.insert(off * op.bytes + b);
            }
        }
        // Odometer over the box.
        let mut k = idx.len();
        loop {
            if k == 0 {
                let n = bytes.len() as u64;
                let segs: BTreeSet<i64> = bytes.iter().map(|b| b.div_euclid(64)).collect();
                let mut runs = Vec::new();
                let mut run = 0u64;
                let mut prev = None;
                for &b in &bytes {
                    if prev.is_some_and(|p: i64| p + 1 != b) {
                        runs.push(run);
                        run = 0;
                    }
                    run += 1;
                    prev = Some(b);
                }
                runs.push(run);
                let ideal = n.div_ceil(64);
                let min_run = runs.into_iter().min().unwrap();
                return TileCount {
                    elements: n / op.bytes as u64,
                    reads,
                    bytes: n,
                    transactions: segs.len() as u64,
                    ideal,
                    min_run,
                    // XLA's verdict, the default: every contiguous run of the tile's bytes
                    // is at least one full 64-byte transaction; the ratio rule, at most
                    // twice the ideal transactions.
                    coalesced: n == 0
                        || match rule {
                            Verdict::Xla => min_run >= 64,
                            Verdict::Ratio => segs.len() as u64 <= 2 * ideal,
                        },
                };
            }
            k -= 1;
            if idx[k] < hi[k] {
                idx[k] += 1;
                break;
            }
            idx[k] = lo[k];
        }
    }
}

/// Row-major strides in elements.
fn row_major(dims: &[i64]) -> Vec<i64> {
    let mut s = vec![1; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1];
    }
    s
}

/// Checks every tiling in `tiles` of fusion `name`: the representative tiles' boxes and
/// every count, operand by operand (`ops[k]` for input k, `out` for the write).
fn check(name: &str, out: Operand, ops: Vec<Operand>, tiles: &[Vec<i64>]) -> usize {
    let sp = spec(name);
    let dims = sp.output.dims.clone();
    let mut checked = 0;
    for (tile, rule) in tiles
        .iter()
        .flat_map(|t| [(t, Verdict::Xla), (t, Verdict::Ratio)])
    {
        let r =
            tiled_report_with(&sp, tile, rule).unwrap_or_else(|e| panic!("{name} {tile:?}: {e}"));
        // The boxes: first at the origin, last at the last tile index, clipped.
        let grid: Vec<i64> = dims
            .iter()
            .zip(tile)
            .map(|(d, t)| (d + t - 1) / t)
            .collect();
        assert_eq!(r.grid, grid);
        assert_eq!(r.tiles[0].lo, vec![0; dims.len()]);
        let last = r.tiles.last().unwrap();
        for i in 0..dims.len() {
            assert_eq!(last.lo[i], (grid[i] - 1) * tile[i]);
            assert_eq!(last.hi[i], dims[i] - 1);
        }
        for ti in &r.tiles {
            for i in 0..dims.len() {
                assert_eq!(ti.lo[i] % tile[i], 0);
                assert_eq!(ti.hi[i], (ti.lo[i] + tile[i]).min(dims[i]) - 1);
            }
        }
        for o in &r.operands {
            let want_op = match o.operand {
                Some(k) => &ops[k],
                None => &out,
            };
            for (ti, got) in r.tiles.iter().zip(&o.counts) {
                let want = brute(want_op, &ti.lo, &ti.hi, rule);
                assert_eq!(
                    got, &want,
                    "{name} tile {tile:?} {} at {}",
                    o.label, ti.which
                );
                checked += 1;
            }
        }
        // Every input appears (the write last).
        let mut seen: Vec<usize> = r.operands.iter().filter_map(|o| o.operand).collect();
        seen.dedup();
        assert_eq!(seen, (0..ops.len()).collect::<Vec<_>>(), "{name}");
        assert!(r.operands.last().unwrap().operand.is_none());
    }
    checked
}

fn tiles2() -> Vec<Vec<i64>> {
    [
        [1, 1],
        [1, 40],
        [24, 1],
        [5, 7],
        [8, 16],
        [24, 40],
        [3, 13],
        [1, 17],
        [16, 24],
    ]
    .iter()
    .map(|t| t.to_vec())
    .collect()
}

fn id(x: &[i64]) -> Vec<Vec<i64>> {
    vec![x.to_vec()]
}

#[test]
fn elementwise_counts_match_brute_force() {
    let rm = || row_major(&[24, 40]);
    let n = check(
        "ew",
        Operand {
            bytes: 4,
            strides: rm(),
            reads: Box::new(id),
        },
        vec![
            Operand {
                bytes: 4,
                strides: rm(),
                reads: Box::new(id),
            },
            Operand {
                bytes: 4,
                strides: rm(),
                reads: Box::new(id),
            },
        ],
        &tiles2(),
    );
    assert!(n > 50);
}

#[test]
fn transpose_f16_counts_match_brute_force() {
    let tiles: Vec<Vec<i64>> = [
        [1, 1],
        [40, 1],
        [1, 24],
        [32, 16],
        [7, 5],
        [40, 24],
        [16, 16],
    ]
    .iter()
    .map(|t| t.to_vec())
    .collect();
    check(
        "tr16",
        Operand {
            bytes: 2,
            strides: row_major(&[40, 24]),
            reads: Box::new(id),
        },
        vec![Operand {
            bytes: 2,
            strides: row_major(&[24, 40]),
            reads: Box::new(|x: &[i64]| vec![vec![x[1], x[0]]]),
        }],
        &tiles,
    );
}

#[test]
fn broadcast_counts_each_byte_once() {
    let sp = spec("bcast");
    // The inputs in parameter order: m, v, c (an s8 converted inside the fusion).
    assert_eq!(sp.inputs.len(), 3);
    check(
        "bcast",
        Operand {
            bytes: 4,
            strides: row_major(&[24, 40]),
            reads: Box::new(id),
        },
        vec![
            Operand {
                bytes: 4,
                strides: row_major(&[24, 40]),
                reads: Box::new(id),
            },
            Operand {
                bytes: 4,
                strides: vec![1],
                reads: Box::new(|x: &[i64]| vec![vec![x[1]]]),
            },
            Operand {
                bytes: 1,
                strides: vec![1],
                reads: Box::new(|x: &[i64]| vec![vec![x[0]]]),
            },
        ],
        &tiles2(),
    );
    // A (24, 40) tile reads v's 160 bytes once, though 24 times over.
    let r = tiled_report(&sp, &[24, 40]).unwrap();
    let v = &r.operands[1].counts[0];
    assert_eq!(
        (v.bytes, v.reads, v.transactions, v.ideal),
        (160, 960, 3, 3)
    );
}

#[test]
fn column_major_f64_counts_match_brute_force() {
    // Layout {0,1}: dimension 0 is minor, so element (i, j) lies at j * 24 + i.
    check(
        "colmajor",
        Operand {
            bytes: 8,
            strides: row_major(&[24, 40]),
            reads: Box::new(id),
        },
        vec![Operand {
            bytes: 8,
            strides: vec![1, 24],
            reads: Box::new(id),
        }],
        &tiles2(),
    );
}

#[test]
fn reduction_counts_match_brute_force() {
    let tiles: Vec<Vec<i64>> = [1, 5, 7, 8, 24].iter().map(|&t| vec![t]).collect();
    check(
        "rows",
        Operand {
            bytes: 4,
            strides: vec![1],
            reads: Box::new(id),
        },
        vec![Operand {
            bytes: 4,
            strides: row_major(&[24, 40]),
            reads: Box::new(|x: &[i64]| (0..40).map(|k| vec![x[0], k]).collect()),
        }],
        &tiles,
    );
}

#[test]
fn bad_tiles_are_refused() {
    let sp = spec("ew");
    for t in [vec![24], vec![0, 4], vec![4, -1], vec![1, 1, 1]] {
        assert!(tiled_report(&sp, &t).is_err(), "{t:?}");
    }
}

/// A size over its extent is clipped to it, as XLA clips a tile: the counts are those of
/// the tile of the extent.
#[test]
fn oversized_tiles_are_clipped() {
    let sp = spec("ew");
    for (big, clipped) in [([25, 1], [24, 1]), ([1, 41], [1, 40]), ([99, 99], [24, 40])] {
        let r = tiled_report(&sp, &big).unwrap();
        let c = tiled_report(&sp, &clipped).unwrap();
        assert_eq!(r.clipped, clipped.to_vec());
        assert_eq!(r.tile, big.to_vec());
        assert_eq!((&r.grid, &r.tiles), (&c.grid, &c.tiles));
        let counts = |x: &ixmap::gpu::tile_coalescing::TiledReport| {
            x.operands
                .iter()
                .map(|o| o.counts.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(counts(&r), counts(&c), "{big:?}");
    }
}
