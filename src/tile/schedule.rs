//! Schedules: which tile each program (a GPU block, a Triton program id) computes. The
//! tiles of the output form a grid of `T_i = ceil(extent_i / size_i)` tiles per dimension;
//! a schedule numbers them `pid in [0, T_0 * .. * T_{n-1} - 1]`:
//!
//! ```text
//! major-to-minor (the last dimension fastest):   t_i = (pid floordiv S_i) mod T_i,
//!                                                 S_i = T_{i+1} * .. * T_{n-1}
//! transposed (the first dimension fastest):       t_i = (pid floordiv R_i) mod T_i,
//!                                                 R_i = T_0 * .. * T_{i-1}
//! ```
//!
//! Transposed reorders the tiled dimensions only: leading batch dimensions (tiled by 1,
//! as a batched dot's are) stay the slowest, so `(b, m, n)` tiles walk m fastest, then n,
//! then b.
//!
//! For a dot over (M, N), major-to-minor walks along N first (consecutive programs share an
//! lhs row block of M x K tiles); transposed walks along M first (they share an rhs column
//! block of K x N tiles). The K loop is not in the grid: each program runs it, so the maps
//! to operand offsets take the K step as a range variable, `(pid)[kstep] -> offsets`.
//!
//! A schedule must number every tile exactly once: [`check`] enumerates every pid.

use super::OperandTile;
use crate::expr::Expr;
use crate::interval::Interval;
use crate::map::{IndexingMap, Variable};

/// The order in which programs walk the grid of tiles.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Order {
    /// The last dimension fastest (row-major over the grid).
    MajorToMinor,
    /// The first dimension fastest.
    Transposed,
}

impl Order {
    pub fn name(self) -> &'static str {
        match self {
            Order::MajorToMinor => "major-to-minor",
            Order::Transposed => "transposed",
        }
    }
}

/// A schedule of the output's tiles.
#[derive(Clone, Debug)]
pub struct Schedule {
    pub order: Order,
    /// Tiles per output dimension.
    pub grid: Vec<i64>,
    /// Number of K steps per contraction dimension (each program loops over them).
    pub ksteps: Vec<i64>,
    /// `(pid)[kstep..] -> (t0, .., kstep..)`: the tile index of a program at a K step.
    pub tile_index: IndexingMap,
    /// `(pid) -> (t0 * size_0, ..)`: where a program's output tile starts.
    pub offsets: IndexingMap,
}

/// How many leading dimensions are batch dimensions: the longest prefix tiled by 1 that
/// leaves at least two dimensions to tile.
pub fn batch_prefix(sizes: &[i64]) -> usize {
    let unit = sizes.iter().take_while(|&&s| s == 1).count();
    unit.min(sizes.len().saturating_sub(2))
}

/// The schedule of tiles of `sizes` over the output `extents` (and `k_sizes` over the
/// contraction `k_extents`) in `order`.
pub fn schedule(
    extents: &[i64],
    sizes: &[i64],
    k_extents: &[i64],
    k_sizes: &[i64],
    order: Order,
) -> Result<Schedule, String> {
    let tiles = |e: &[i64], z: &[i64]| -> Result<Vec<i64>, String> {
        e.iter()
            .zip(z)
            .map(|(&n, &s)| {
                if s < 1 || n < 1 {
                    return Err(format!("tile size {s} over extent {n}"));
                }
                crate::expr::arith::ceil_div(n, s).ok_or_else(|| "grid overflow".to_string())
            })
            .collect()
    };
    let grid = tiles(extents, sizes)?;
    let ksteps = tiles(k_extents, k_sizes)?;
    let total = grid
        .iter()
        .try_fold(1i64, |a, &t| a.checked_mul(t))
        .ok_or("the grid has too many tiles")?;
    let n = grid.len();
    // Fastest dimension first. Transposed swaps the walk over the tiled dimensions only:
    // leading batch dimensions (a prefix tiled by 1, as a dot's batch dimensions are, while
    // at least two dimensions remain) stay outermost, in major-to-minor order, so programs
    // of one batch element stay consecutive, as XLA's schedules keep them.
    let nb = batch_prefix(sizes);
    let dim_order: Vec<usize> = match order {
        Order::MajorToMinor => (0..n).rev().collect(),
        Order::Transposed => (nb..n).chain((0..nb).rev()).collect(),
    };
    // stride of dimension i: product of the grid sizes of the dimensions faster than it.
    let mut stride = vec![1i64; n];
    let mut acc = 1i64;
    for &i in &dim_order {
        stride[i] = acc;
        acc = acc.saturating_mul(grid[i]);
    }
    let pid = Expr::var(0);
    let t: Vec<Expr> = (0..n)
        .map(|i| {
            if grid[i] == 1 {
                return Expr::constant(0);
            }
            let q = if stride[i] == 1 {
                pid
            } else {
                pid.floordiv(Expr::constant(stride[i]))
            };
            // The slowest dimension needs no mod: pid floordiv stride < grid.
            if stride[i].saturating_mul(grid[i]) >= total {
                q
            } else {
                q.modulo(Expr::constant(grid[i]))
            }
        })
        .collect();
    let dims = vec![Variable::new("pid", 0, total - 1)];
    let ranges: Vec<Variable> = ksteps
        .iter()
        .enumerate()
        .map(|(j, &s)| Variable::new(format!("kstep{j}"), 0, s - 1))
        .collect();
    let mut idx = t.clone();
    idx.extend((0..ksteps.len()).map(|j| Expr::var((1 + j) as u32)));
    let tile_index = IndexingMap::new(dims.clone(), ranges, vec![], idx, vec![]);
    let offs = t
        .iter()
        .zip(sizes)
        .map(|(&e, &z)| crate::expr::canonical(e.mul(Expr::constant(z))))
        .collect();
    let offsets = IndexingMap::new(dims, vec![], vec![], offs, vec![]);
    Ok(Schedule {
        order,
        grid,
        ksteps,
        tile_index,
        offsets,
    })
}

/// `(pid)[kstep..] -> offsets`: where a program's tile of an operand starts at each K step.
pub fn operand_offsets(s: &Schedule, tile: &OperandTile) -> IndexingMap {
    let mut m = crate::hlo::fusion::compose_simplified(&s.tile_index, &tile.offsets);
    // Composition names variables by position; the schedule's names read better.
    // A K step range of one value simplifies away; the program id keeps its name.
    if m.dims.len() == 1 {
        m.dims[0].name = "pid".into();
        if m.ranges.len() == s.tile_index.ranges.len() {
            for (r, q) in m.ranges.iter_mut().zip(&s.tile_index.ranges) {
                r.name = q.name.clone();
            }
        }
    }
    m
}

/// Enumerates every pid: the schedule must give each tile of the grid exactly once.
/// Returns the number of programs.
pub fn check(s: &Schedule, limit: u64) -> Result<u64, String> {
    let total = s.tile_index.dims[0].bounds.hi.saturating_add(1);
    if total as u64 > limit {
        return Err(format!("{total} programs: too many to enumerate"));
    }
    let n = s.grid.len();
    let mut seen = vec![false; total as usize];
    let mut point = vec![0i64; 1 + s.ksteps.len()];
    for pid in 0..total {
        point[0] = pid;
        let mut flat = 0i64;
        for i in 0..n {
            let ti = crate::expr::eval(s.tile_index.results[i], &point)
                .map_err(|e| format!("pid {pid}: {e}"))?;
            if !Interval::new(0, s.grid[i] - 1).contains(ti) {
                return Err(format!(
                    "pid {pid} gives tile index {ti} along {i}, outside the grid"
                ));
            }
            flat = flat * s.grid[i] + ti;
        }
        if std::mem::replace(&mut seen[flat as usize], true) {
            return Err(format!("pid {pid} repeats a tile another program computes"));
        }
    }
    Ok(total as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tile_at(s: &Schedule, pid: i64) -> Vec<i64> {
        s.tile_index
            .results
            .iter()
            .map(|&e| crate::expr::eval(e, &[pid]).expect("in range"))
            .collect()
    }

    /// Transposed walks the tiled dimensions first-fastest but keeps a batch dimension
    /// (tiled by 1) outermost: (b, m, n) tiles go m, then n, then b.
    #[test]
    fn transposed_keeps_batch_outermost() {
        let s = schedule(&[2, 4, 4], &[1, 2, 2], &[], &[], Order::Transposed).unwrap();
        let walk: Vec<Vec<i64>> = (0..8).map(|p| tile_at(&s, p)).collect();
        assert_eq!(
            walk,
            vec![
                vec![0, 0, 0],
                vec![0, 1, 0],
                vec![0, 0, 1],
                vec![0, 1, 1],
                vec![1, 0, 0],
                vec![1, 1, 0],
                vec![1, 0, 1],
                vec![1, 1, 1],
            ]
        );
        assert_eq!(check(&s, 1 << 10).unwrap(), 8);
        // Major-to-minor: n fastest, b slowest.
        let s = schedule(&[2, 4, 4], &[1, 2, 2], &[], &[], Order::MajorToMinor).unwrap();
        assert_eq!(tile_at(&s, 1), vec![0, 0, 1]);
        assert_eq!(tile_at(&s, 4), vec![1, 0, 0]);
        // Without a batch prefix (or with only two dimensions) the whole walk transposes.
        assert_eq!(batch_prefix(&[1, 2]), 0);
        assert_eq!(batch_prefix(&[1, 1, 8, 8]), 2);
        assert_eq!(batch_prefix(&[1, 1, 1]), 1);
        let s = schedule(&[4, 4], &[1, 2], &[], &[], Order::Transposed).unwrap();
        assert_eq!(tile_at(&s, 1), vec![1, 0]);
    }
}
