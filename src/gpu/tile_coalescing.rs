//! Coalescing of tiled reads: when the output is cut into tiles of given sizes and a tile's
//! elements are computed together, which bytes does the tile read from each operand (and
//! write to the output), and how well do they fill 64-byte memory transactions?
//!
//! For each operand access (output → operand map, as the tiling commands use it) and the
//! output's own write (the identity), over a few representative tiles — the first, an
//! interior one (the middle tile along every dimension) and the last (partial when a size
//! does not divide its extent) — we enumerate the tile's output elements through the map
//! (and the map's symbols, e.g. a reduction's reduced dimensions), turn each operand element
//! into its offset in the operand's physical layout, and count exactly:
//!
//! - `bytes`: the distinct bytes touched (an element read by several tile elements, as a
//!   broadcast operand is, counts once), element size from the tensor's type;
//! - `transactions`: the distinct 64-byte aligned segments those bytes fall in;
//! - `ideal`: `ceil(bytes / 64)`, the segments the same bytes need when packed contiguously
//!   from an aligned address (the least any read of that many bytes can touch);
//! - `utilization`: `bytes / (transactions × 64)`;
//! - `min run`: the shortest contiguous run of touched bytes.
//!
//! Verdict, by default XLA's (`IsTiledReadCoalescedHeuristic`,
//! xla/service/gpu/model/coalescing_analysis.cc): *coalesced* when every contiguous run of
//! bytes the tile touches is at least one full 64-byte transaction (`min run ≥ 64 B`; XLA
//! computes the run from the operand tile's shape and strides, the count measures it). With
//! `verdict=ratio`, the ratio rule instead: `transactions ≤ 2 × ideal`, i.e. at most twice
//! the segments the bytes strictly need, which does not condemn a read that is small by
//! nature (one broadcast element in one segment is as good as it gets).
//!
//! A tile larger than the output along a dimension is clipped to the extent, as XLA clips
//! it (`min(tile_size, dim_size)`): that dimension is then read whole.
//!
//! ```text
//! transpose f32[256,256] -> [256,256], tile (32, 32): input 32 runs of 128 bytes,
//!   64 transactions, ideal 64, 100 %
//! the same with tile (1, 128): 128 elements a row apart, 128 transactions, ideal 8, 6.25 %
//! ```

use super::spec::{KernelSpec, Tensor};
use crate::interval::Interval;
use crate::map::{DomainPoints, IndexingMap, Limits};
use crate::MapError;
use std::collections::BTreeSet;

/// The transaction size (the tiling commands' `LINE`, `tile::tune`): XLA's
/// `dram_to_l2_transaction_size_bytes` on post-Volta NVIDIA GPUs.
pub const SEGMENT: i64 = 64;

/// Which rule turns the counts into a verdict.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum Verdict {
    /// XLA's: every contiguous run at least one full transaction.
    #[default]
    Xla,
    /// At most twice the ideal number of transactions.
    Ratio,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Xla => "xla",
            Verdict::Ratio => "ratio",
        }
    }
    /// The rule in words, for the report.
    pub fn describe(self) -> String {
        match self {
            Verdict::Xla => format!("coalesced when every contiguous run is at least one {SEGMENT}-byte transaction (XLA's rule; verdict=ratio for the ratio rule)"),
            Verdict::Ratio => "coalesced when transactions ≤ 2 × ideal (verdict=ratio)".to_string(),
        }
    }
    /// The verdict on counted figures.
    pub fn judge(self, transactions: u64, ideal: u64, min_run: u64, bytes: u64) -> bool {
        match self {
            Verdict::Xla => bytes == 0 || min_run >= SEGMENT as u64,
            Verdict::Ratio => transactions <= ideal.saturating_mul(2),
        }
    }
}

/// One representative tile: which one, and its box in the output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileAt {
    /// `first`, `interior` or `last` (with `, partial` when clipped by the output's edge).
    pub which: String,
    /// The tile's index along each dimension.
    pub index: Vec<i64>,
    /// The output box `[lo, hi]` (inclusive) per dimension.
    pub lo: Vec<i64>,
    pub hi: Vec<i64>,
}

/// The exact counts for one operand read through one tile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileCount {
    /// Distinct elements touched.
    pub elements: u64,
    /// Reads in all (one per tile element and symbol value): more than `elements` when an
    /// element is read several times (broadcast, reduction windows).
    pub reads: u64,
    pub bytes: u64,
    pub transactions: u64,
    pub ideal: u64,
    /// Shortest contiguous run of touched bytes (0 when nothing is touched).
    pub min_run: u64,
    /// The verdict under the report's rule ([`Verdict`]).
    pub coalesced: bool,
}

impl TileCount {
    /// `bytes / (transactions × 64)`, in percent.
    pub fn utilization(&self) -> f64 {
        if self.transactions == 0 {
            100.0
        } else {
            100.0 * self.bytes as f64 / (self.transactions as f64 * SEGMENT as f64)
        }
    }
}

/// One operand (or the output's write) over the representative tiles.
#[derive(Clone, Debug, PartialEq)]
pub struct TiledOperand {
    pub label: String,
    /// `Some(K)` for operand K, `None` for the output's write.
    pub operand: Option<usize>,
    pub tensor: Tensor,
    /// One count per representative tile, in the order of [`TiledReport::tiles`].
    pub counts: Vec<TileCount>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TiledReport {
    pub fusion: String,
    /// The tile sizes asked for.
    pub tile: Vec<i64>,
    /// The sizes counted: each clipped to its extent.
    pub clipped: Vec<i64>,
    pub verdict: Verdict,
    /// Tiles along each dimension (the last possibly partial).
    pub grid: Vec<i64>,
    pub tiles: Vec<TileAt>,
    pub operands: Vec<TiledOperand>,
}

/// What is wrong with a tile for an output of `dims`, if anything: `(position, message)`,
/// the position being the size at fault (or `None` for the rank).
pub fn check_tile(dims: &[i64], tile: &[i64]) -> Result<(), (Option<usize>, String)> {
    if tile.len() != dims.len() {
        return Err((
            None,
            format!(
                "the tile has {} size{} but the output has {} dimension{}",
                tile.len(),
                if tile.len() == 1 { "" } else { "s" },
                dims.len(),
                if dims.len() == 1 { "" } else { "s" }
            ),
        ));
    }
    for (i, &t) in tile.iter().enumerate() {
        if t < 1 {
            return Err((
                Some(i),
                format!("tile size {t} along dimension {i} is not positive"),
            ));
        }
    }
    Ok(())
}

/// The representative tiles of an output of `dims` cut by `tile` (already checked: every
/// size at least 1; a size over its extent is clipped to it, so nothing here overflows):
/// the first, the interior one (the middle index along every dimension) and the last; a
/// tile equal to one listed before is left out.
pub fn representative_tiles(dims: &[i64], tile: &[i64]) -> (Vec<i64>, Vec<TileAt>) {
    let tile: Vec<i64> = tile
        .iter()
        .zip(dims)
        .map(|(&t, &d)| t.min(d.max(1)))
        .collect();
    let tile = tile.as_slice();
    let grid: Vec<i64> = dims
        .iter()
        .zip(tile)
        .map(|(&d, &t)| (d - 1) / t + 1)
        .collect();
    let mut out: Vec<TileAt> = Vec::new();
    let picks: [(&str, Box<dyn Fn(i64) -> i64>); 3] = [
        ("first", Box::new(|_| 0)),
        ("interior", Box::new(|n| n / 2)),
        ("last", Box::new(|n| n - 1)),
    ];
    for (name, pick) in picks.iter() {
        let index: Vec<i64> = grid.iter().map(|&n| pick(n)).collect();
        if out.iter().any(|t| t.index == index) {
            continue;
        }
        let lo: Vec<i64> = index.iter().zip(tile).map(|(&k, &t)| k * t).collect();
        let hi: Vec<i64> = lo
            .iter()
            .zip(tile)
            .zip(dims)
            .map(|((&l, &t), &d)| l + t.min(d - l) - 1)
            .collect();
        let partial = lo
            .iter()
            .zip(&hi)
            .zip(tile)
            .any(|((&l, &h), &t)| h - l + 1 < t);
        out.push(TileAt {
            which: if partial {
                format!("{name}, partial")
            } else {
                (*name).to_string()
            },
            index,
            lo,
            hi,
        });
    }
    (grid, out)
}

/// Counts the bytes, segments and runs `map` (output → `t`) touches over the output box
/// `[lo, hi]`.
pub fn count_tile(
    map: &IndexingMap,
    t: &Tensor,
    lo: &[i64],
    hi: &[i64],
    limits: &Limits,
    verdict: Verdict,
) -> Result<TileCount, MapError> {
    if map.dims.len() != lo.len() || map.results.len() != t.rank() {
        return Err(MapError::Other(format!(
            "the map to {} has {} dimensions and {} results; the tile has {} sizes and {} has rank {}",
            t.name,
            map.dims.len(),
            map.results.len(),
            lo.len(),
            t.name,
            t.rank()
        )));
    }
    let mut m = map.clone();
    for (v, (&l, &h)) in m.dims.iter_mut().zip(lo.iter().zip(hi)) {
        v.bounds = v.bounds.intersect(&Interval::new(l, h));
    }
    let strides = t.strides()?;
    let mut offsets: BTreeSet<i64> = BTreeSet::new();
    let mut reads = 0u64;
    DomainPoints::for_each(&m, limits, &mut |_, res| {
        let mut off = 0i64;
        for (j, &x) in res.iter().enumerate() {
            if x < 0 || x >= t.dims[j] {
                return Err(MapError::Other(format!(
                    "the map reads index {x} of dimension {j} of {}, outside [0, {}]",
                    t.name,
                    t.dims[j] - 1
                )));
            }
            off = x
                .checked_mul(strides[j])
                .and_then(|p| off.checked_add(p))
                .ok_or_else(|| MapError::Overflow(format!("an offset into {}", t.name)))?;
        }
        reads += 1;
        offsets.insert(off);
        Ok(true)
    })?;
    let eb = t.elem.bytes();
    let mut segments: BTreeSet<i64> = BTreeSet::new();
    let mut min_run: Option<u64> = None;
    let mut run = 0u64;
    let mut prev: Option<i64> = None;
    for &o in &offsets {
        let first = o
            .checked_mul(eb)
            .ok_or_else(|| MapError::Overflow(format!("a byte address in {}", t.name)))?;
        let last = first
            .checked_add(eb - 1)
            .ok_or_else(|| MapError::Overflow(format!("a byte address in {}", t.name)))?;
        for s in first.div_euclid(SEGMENT)..=last.div_euclid(SEGMENT) {
            segments.insert(s);
        }
        match prev {
            Some(p) if p + 1 == o => run += eb as u64,
            Some(_) => {
                min_run = Some(min_run.map_or(run, |m| m.min(run)));
                run = eb as u64;
            }
            None => run = eb as u64,
        }
        prev = Some(o);
    }
    if prev.is_some() {
        min_run = Some(min_run.map_or(run, |m| m.min(run)));
    }
    let elements = offsets.len() as u64;
    let bytes = elements
        .checked_mul(eb as u64)
        .ok_or_else(|| MapError::Overflow("the bytes of a tile".into()))?;
    let transactions = segments.len() as u64;
    let ideal = bytes.div_ceil(SEGMENT as u64);
    let min_run = min_run.unwrap_or(0);
    Ok(TileCount {
        elements,
        reads,
        bytes,
        transactions,
        ideal,
        min_run,
        coalesced: verdict.judge(transactions, ideal, min_run, bytes),
    })
}

/// The tiled coalescing report of `spec` cut into tiles of `tile` (checked with
/// [`check_tile`] first; sizes over their extents clipped), judged by XLA's rule: every
/// operand access, then the output's write.
pub fn tiled_report(spec: &KernelSpec, tile: &[i64]) -> Result<TiledReport, MapError> {
    tiled_report_with(spec, tile, Verdict::Xla)
}

/// [`tiled_report`] judged by `verdict`.
pub fn tiled_report_with(
    spec: &KernelSpec,
    tile: &[i64],
    verdict: Verdict,
) -> Result<TiledReport, MapError> {
    let dims = &spec.output.dims;
    check_tile(dims, tile).map_err(|(_, m)| MapError::Other(m))?;
    let (grid, tiles) = representative_tiles(dims, tile);
    let limits = Limits::default();
    let accs = spec.input_accesses()?;
    let mut operands = Vec::new();
    for (k, acc) in accs.iter().enumerate() {
        let t = spec
            .inputs
            .get(acc.input)
            .ok_or_else(|| MapError::Other("no such input".into()))?;
        let same: Vec<usize> = (0..accs.len())
            .filter(|&j| accs[j].input == acc.input)
            .collect();
        let label = if same.len() > 1 {
            let pos = same.iter().position(|&j| j == k).unwrap_or(0);
            format!("{} #{}", t.name, pos + 1)
        } else {
            t.name.clone()
        };
        let counts = tiles
            .iter()
            .map(|ti| count_tile(&acc.map, t, &ti.lo, &ti.hi, &limits, verdict))
            .collect::<Result<Vec<_>, _>>()?;
        operands.push(TiledOperand {
            label,
            operand: Some(acc.input),
            tensor: t.clone(),
            counts,
        });
    }
    let id = IndexingMap::identity(dims);
    let counts = tiles
        .iter()
        .map(|ti| count_tile(&id, &spec.output, &ti.lo, &ti.hi, &limits, verdict))
        .collect::<Result<Vec<_>, _>>()?;
    operands.push(TiledOperand {
        label: format!("{} (write)", spec.output.name),
        operand: None,
        tensor: spec.output.clone(),
        counts,
    });
    Ok(TiledReport {
        fusion: spec.name.clone(),
        tile: tile.to_vec(),
        clipped: tile.iter().zip(dims).map(|(&t, &d)| t.min(d)).collect(),
        verdict,
        grid,
        tiles,
        operands,
    })
}
