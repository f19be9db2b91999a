//! The thread/value table of a layout, as CuTe's `print_latex` draws it: a grid over the
//! tensor, each cell naming the thread and value (register) index that hold the element.
//!
//! A map's variables are read as threads and values ([`roles`]): `lane`, `warp`, `block`
//! (thread `lane + lanes · (warp + warps · block)`) as Triton names them, `th_x ... bl_z` as
//! XLA does; otherwise the first variable is the thread and the others, first fastest, the
//! value. A map with one variable has values only. Its results are the cell: two results are
//! (row, column); one result is an offset, laid out column-major over `tile=(M, N)` as CuTe
//! does (`(offset mod M, offset floordiv M)`), or along one row without a tile.

use super::{LayoutError, Result};
use crate::map::{DomainPoints, IndexingMap, Limits};

/// How a map's dimensions combine into a thread and a value index.
#[derive(Clone, Debug)]
pub struct Roles {
    /// For each dimension: thread (true) or value (false), and its weight in that index.
    pub dims: Vec<(bool, i64)>,
    /// Threads per warp (the `lane` dimension's size, else 32).
    pub warp_size: i64,
    pub has_threads: bool,
}

impl Roles {
    pub fn thread_value(&self, p: &[i64]) -> (i64, i64) {
        let mut t = 0;
        let mut v = 0;
        for ((is_t, w), x) in self.dims.iter().zip(p) {
            if *is_t {
                t += w * x;
            } else {
                v += w * x;
            }
        }
        (t, v)
    }
}

/// Threads and values of a map's variables (dimensions, then range and runtime variables).
/// Triton's `lane`, `warp`, `block` and XLA's `th_x`, `th_y`, `th_z`, `bl_x`, `bl_y`, `bl_z`
/// make up the thread index (in that order, first fastest); every other variable is part of
/// the value index. Without those names the first of several variables is the thread.
pub fn roles(m: &IndexingMap) -> Roles {
    let vars: Vec<&crate::map::Variable> = m.vars().collect();
    let size = |i: usize| {
        let b = vars[i].bounds;
        b.hi.saturating_sub(b.lo).saturating_add(1).max(1)
    };
    const THREAD: [&str; 9] = [
        "lane", "warp", "block", "th_x", "th_y", "th_z", "bl_x", "bl_y", "bl_z",
    ];
    let named = vars.iter().any(|v| THREAD.contains(&v.name.as_str()));
    let mut dims = vec![(false, 0i64); vars.len()];
    let mut warp_size = 32;
    let mut tw = 1i64;
    if named {
        for key in THREAD {
            if let Some(i) = vars.iter().position(|v| v.name == key) {
                if key == "lane" {
                    warp_size = size(i);
                }
                dims[i] = (true, tw);
                tw = tw.saturating_mul(size(i));
            }
        }
    } else if vars.len() > 1 {
        dims[0] = (true, 1);
    }
    let mut vw = 1i64;
    for (i, d) in dims.iter_mut().enumerate() {
        if !d.0 {
            *d = (false, vw);
            vw = vw.saturating_mul(size(i));
        }
    }
    let has_threads = dims.iter().any(|d| d.0);
    Roles {
        dims,
        warp_size,
        has_threads,
    }
}

/// Who holds each element: `cells[row][col]` lists (thread, value) pairs.
#[derive(Clone, Debug)]
pub struct Picture {
    pub rows: usize,
    pub cols: usize,
    pub cells: Vec<Vec<Vec<(i64, i64)>>>,
    pub has_threads: bool,
    /// Number of distinct threads (for colours).
    pub threads: i64,
}

/// Most cells a picture draws.
pub const MAX_CELLS: i64 = 1 << 16;

/// The thread/value table of `m`; `tile` lays out a one-result map (column-major); `warp`
/// keeps only that warp's threads (the elements one warp accesses, the rest `.`).
pub fn picture(m: &IndexingMap, tile: Option<(i64, i64)>, warp: Option<i64>) -> Result<Picture> {
    let r = roles(m);
    let nres = m.results.len();
    if nres == 0 || nres > 2 {
        return Err(LayoutError::new(format!(
            "a picture needs one result (an offset) or two (row, column); the map has {nres}"
        )));
    }
    if let Some((a, b)) = tile {
        if a < 1 || b < 1 || a.saturating_mul(b) > MAX_CELLS {
            return Err(LayoutError::new(format!(
                "tile=({a}, {b}): the tile must be positive with at most {MAX_CELLS} cells"
            )));
        }
    }
    let mut pts: Vec<(i64, i64, i64, i64)> = Vec::new();
    let mut err = None;
    DomainPoints::for_each(
        m,
        &Limits {
            max_points: 1 << 20,
        },
        &mut |p, res| {
            let (row, col) = if nres == 2 {
                (res[0], res[1])
            } else if let Some((mm, _)) = tile {
                (res[0].rem_euclid(mm), res[0].div_euclid(mm))
            } else {
                (0, res[0])
            };
            if row < 0 || col < 0 || row >= MAX_CELLS || col >= MAX_CELLS {
                err = Some(format!("the element ({row}, {col}) is outside the picture"));
                return Ok(false);
            }
            let (t, v) = r.thread_value(p);
            if warp.is_none_or(|w| t.div_euclid(r.warp_size.max(1)) == w) {
                pts.push((row, col, t, v));
            }
            Ok(true)
        },
    )
    .map_err(|e| LayoutError::new(e.to_string()))?;
    if let Some(e) = err {
        return Err(LayoutError::new(e));
    }
    let (mut rows, mut cols) = match tile {
        Some((a, b)) => (a, b),
        None => (0, 0),
    };
    // With one warp kept, the picture still spans the whole tensor.
    if warp.is_some() {
        let full = picture(m, tile, None)?;
        rows = rows.max(full.rows as i64);
        cols = cols.max(full.cols as i64);
    }
    for (row, col, _, _) in &pts {
        rows = rows.max(row + 1);
        cols = cols.max(col + 1);
    }
    if rows.saturating_mul(cols) > MAX_CELLS {
        return Err(LayoutError::new(format!(
            "the picture would have {rows} x {cols} cells, more than {MAX_CELLS}"
        )));
    }
    let mut cells = vec![vec![Vec::new(); cols as usize]; rows as usize];
    let mut threads = 0;
    for (row, col, t, v) in pts {
        cells[row as usize][col as usize].push((t, v));
        threads = threads.max(t + 1);
    }
    for row in &mut cells {
        for c in row {
            c.sort();
        }
    }
    Ok(Picture {
        rows: rows as usize,
        cols: cols as usize,
        cells,
        has_threads: r.has_threads,
        threads,
    })
}
