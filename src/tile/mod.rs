//! Symbolic tiles and operand utilization: two of the three uses of indexing maps that
//! seed 000 names (the third, coalescing, lives in `gpu/`).
//!
//! A *tile* is a hyper-rectangle of a tensor given by offsets, sizes and strides. Cut the
//! output into tiles of `sizes`; tile `t` (a tuple of tile indices) starts at
//! `t_i * size_i`. Through the output-to-input map, the same tile reads a tile of the
//! operand whose offsets are expressions in `t`:
//!
//! ```text
//! p0 = f32[4, 8] parameter(0);  r = f32[32] reshape(p0)
//! output -> p0:      (d0) -> (d0 floordiv 8, d0 mod 8), domain: d0 in [0, 31]
//! tile sizes (16):   offsets (t0 * 2, 0), sizes (2, 8), strides (1, 1), t0 in [0, 1]
//! tile sizes (4):    offsets (t0 floordiv 2, (t0 mod 2) * 4), sizes (1, 4), strides (1, 1)
//! tile sizes (12):   not representable as a tile (12 is neither a multiple nor a divisor of 8)
//! ```
//!
//! The operand tile names *exactly* the elements the map names for the output tile: the
//! set `{offset + stride * k : 0 <= k < size}` (cut to `clip` where the map's domain cuts a
//! partial tile) equals `{map(d, s) : d in the output tile, s in the range variables}` for
//! every tile index. [`check::check_exact`] enumerates both sides; the tests run it on
//! every case and the `tile` command runs it when the domain is small.
//!
//! Input-to-output propagation is the same computation on the input-to-output map.
//!
//! Shown running in `sessions/tile/*.ixm`.

pub mod check;
mod derive;
pub mod fusion;
pub mod normalize;
pub mod schedule;
pub mod space;
pub mod symbolic;
pub mod tune;
pub mod utilization;

pub use check::check_exact;
pub use derive::derive;
pub use utilization::{utilization, Utilization};

use crate::interval::Interval;
use crate::map::IndexingMap;

/// The tile of one operand (or of the output, read through the identity).
#[derive(Clone, Debug, PartialEq)]
pub struct OperandTile {
    /// `(t0, ..){runtime} -> (offset_0, ..)`: the first element of the tile.
    pub offsets: IndexingMap,
    pub sizes: Vec<i64>,
    pub strides: Vec<i64>,
    /// Where a coordinate is cut by the map's domain (a partial tile): the tile is
    /// intersected with this interval. `Interval::FULL` where nothing cuts.
    pub clips: Vec<Interval>,
    /// Where the cut of a partial tile is not one interval per coordinate, or a coordinate
    /// sums element variables that leave regular gaps (`d0 * 128 + s0`, `s0` in [0, 63]:
    /// `k0 mod 128 in [0, 63]`): conditions over the tile map's variables
    /// `(t, k, runtime)` that an element of the box must meet to be read (an emitter's
    /// mask). Empty for tiles that are whole or clipped.
    pub masks: Vec<(crate::expr::Expr, Interval)>,
    /// `(t0, ..)[k0, ..]{runtime} -> (offset + stride * k, ..)`: every element of the tile.
    pub map: IndexingMap,
}

impl OperandTile {
    /// Each coordinate's size, or where a mask keeps the gaps of a sum along it
    /// (`k0 mod 128 in [0, 63]`), its shortest stretch without a gap (64): the longest run
    /// of the box that is read whole.
    pub fn runs(&self) -> Vec<i64> {
        let n = self.offsets.dims.len() as u32;
        let nk = self.map.ranges.len() as u32;
        let mut runs = self.sizes.clone();
        for &(e, iv) in &self.masks {
            if !e.has_div() {
                continue;
            }
            // The coordinates whose element variable (a `k`, in the map's result) it reads.
            for (j, r) in self.map.results.iter().enumerate() {
                let mut reads = false;
                r.visit_vars(&mut |v| reads |= v >= n && v < n + nk && e.uses_var(v));
                if reads {
                    if let Some(z) = runs.get_mut(j) {
                        *z = (*z).min(iv.hi.saturating_add(1).max(1));
                    }
                }
            }
        }
        runs
    }
}

/// Why an operand's accesses are not a tile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotATile {
    pub reason: String,
}

impl NotATile {
    pub fn new(reason: impl Into<String>) -> NotATile {
        NotATile {
            reason: reason.into(),
        }
    }
}

impl std::fmt::Display for NotATile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not representable as a tile: {}", self.reason)
    }
}

/// The tile of the output itself for `sizes` over a tensor of `extents`.
pub fn output_tile(extents: &[i64], sizes: &[i64]) -> Result<OperandTile, NotATile> {
    derive(&IndexingMap::identity(extents), sizes)
}

/// Whether tile `a` contains tile `b` for every tile index (same tile space): then an
/// operand read through both reads exactly `a`. Decided per coordinate from the offsets.
pub fn contains(a: &OperandTile, b: &OperandTile) -> bool {
    if a.sizes.len() != b.sizes.len() || a.offsets.dims.len() != b.offsets.dims.len() {
        return false;
    }
    if a == b {
        return true;
    }
    // A masked tile reads part of its box: only an unmasked `a` is known to contain it.
    if !a.masks.is_empty() {
        return false;
    }
    let bounds = a.offsets.bounds();
    (0..a.sizes.len()).all(|j| {
        let (oa, ob) = (a.offsets.results[j], b.offsets.results[j]);
        let (sa, sb) = (a.strides[j], b.strides[j]);
        let (za, zb) = (a.sizes[j], b.sizes[j]);
        if oa == ob && sa == sb && za == zb && a.clips[j] == b.clips[j] {
            return true;
        }
        let Some(span_b) = (zb - 1).checked_mul(sb) else {
            return false;
        };
        // a is one fixed interval: b's hull must lie inside it.
        if let (Some(o), 1) = (oa.as_const(), sa) {
            let Some(end) = o.checked_add(za - 1) else {
                return false;
            };
            let ia = Interval::new(o, end).intersect(&a.clips[j]);
            let rb = crate::interval::range_of(ob, &bounds);
            let hull = Interval::new(
                rb.lo.saturating_add(span_b.min(0)),
                rb.hi.saturating_add(span_b.max(0)),
            );
            if ia.contains_interval(&hull.intersect(&b.clips[j])) {
                return true;
            }
        }
        // Both contiguous with the same clip: b starts inside a and ends inside a.
        let diff = crate::expr::canonical(ob.sub(oa));
        let r = crate::interval::range_of(diff, &bounds);
        sa == 1
            && sb == 1
            && a.clips[j] == b.clips[j]
            && !r.is_full()
            && r.lo >= 0
            && r.hi.checked_add(span_b).is_some_and(|h| h <= za - 1)
    })
}
