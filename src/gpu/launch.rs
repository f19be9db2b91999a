//! Launch mappings: which thread writes which output element, and from where it reads.
//!
//! A launch is a block size, a grid, and the thread-id maps in XLA's form
//! `(th_x, th_y, th_z, bl_x, bl_y, bl_z)[...] -> (...)`. For seed 001's elementwise op on
//! `f32[20,40,300]`, block 128 and vector 4 (each thread writes 4 contiguous elements):
//!
//! ```text
//! (th_x, th_y, th_z, bl_x, bl_y, bl_z)[unroll_id] -> (
//!     (bl_x * 128 + th_x) floordiv 3000,
//!     ((bl_x * 128 + th_x) floordiv 75) mod 40,
//!     ((bl_x * 128 + th_x) mod 75) * 4 + unroll_id),
//! domain: th_x in [0, 127], ..., bl_x in [0, 468], ..., unroll_id in [0, 3],
//!         bl_x * 128 + th_x in [0, 59999]
//! ```
//!
//! Four strategies for one output, as XLA's emitters use them:
//! - **loop**: consecutive threads take consecutive vectors of the output in its physical
//!   order (`unroll_id` runs over a vector; `chunk_id` repeats this with a stride of the
//!   whole grid, for `unroll` or when the grid is capped);
//! - **tiled transpose**: a block moves a 32×32 tile through shared memory, reading rows of
//!   the input and writing rows of the output, so both sides are contiguous across a warp;
//! - **row reduction**: a warp per output element, lanes striding the reduced row by 32;
//! - **column reduction**: a thread per output element, looping over the reduced rows, so a
//!   warp reads 32 neighbouring columns of one row at a time.
//!
//! Roots that are not one element per output index run several loops ([`Launch::parts`]):
//! a **concatenate** (a loop per operand, sized by the largest), an in-place
//! **dynamic-update-slice** and a **scatter** (a loop over the update(s), stored through
//! runtime variables `rt<d>`: clamped starts, or starts read from the indices). The
//! further outputs of a tuple root are written by the launch of output 0, each through its
//! own map ([`more_output_writes`]): the loop's index through a bitcast, a transpose's side
//! output from the tile read, a reduction's side outputs where it reads, and independent
//! reduction groups in their own row of blocks (`bl_y`).
//!
//! Shown running in `sessions/gpu/threads.ixm`.

use super::spec::{Body, InputAccess, KernelSpec, Root, Tensor};
use crate::expr::Expr;
use crate::interval::Interval;
use crate::map::{compose, IndexingMap, Variable};
use crate::simplify::{simplify, SimplifyLimits};
use crate::MapError;

/// What the user chose: threads per block, elements per thread in one vector (XLA's
/// `unroll_id`), how many vectors a thread handles (XLA's `chunk_id`, a whole grid apart),
/// and the most blocks the grid may have (more elements than that become more chunks).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub block: i64,
    pub vector: i64,
    pub unroll: i64,
    pub max_blocks: i64,
}

/// CUDA's limit on `gridDim.x`: 2^31 - 1 blocks.
pub const MAX_GRID: i64 = i32::MAX as i64;

impl Default for LaunchConfig {
    fn default() -> Self {
        LaunchConfig {
            block: 128,
            vector: 1,
            unroll: 1,
            max_blocks: MAX_GRID,
        }
    }
}

/// The edge of a transpose tile and the warp width.
pub const TILE: i64 = 32;
pub const WARP: i64 = 32;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Strategy {
    Loop,
    /// Output dims `a` (the input's minor dim) and `b` (the output's minor dim) are tiled.
    TiledTranspose {
        a: usize,
        b: usize,
    },
    RowReduction,
    ColumnReduction,
    /// XLA's concatenate emitter: one loop per operand over its slice of the output, all
    /// sized by the largest operand (see [`Launch::parts`]).
    Concatenate,
    /// An in-place dynamic-update-slice: the loop runs over the update and writes the
    /// output at the clamped start indices (runtime variables `rt0, ..`).
    DynamicUpdateSlice,
    /// A scatter: the loop runs over the updates; each combines its element into the
    /// output at its window position plus the start indices read at run time (runtime
    /// variables `rt<operand dim>`), atomically (updates may land on one element).
    Scatter,
    /// An elementwise root that reads reductions of its own row (softmax: the row max in
    /// `exp(x - max)`, then the row sum): `row_threads` lanes per row (a warp, several for
    /// long rows, or fewer lanes for short rows; [`row_split`]), which compute each such
    /// reduction once, together (each lane a strided part of the row, then a butterfly of
    /// shuffles gives every lane its warp's value, and the row's warps meet in shared
    /// memory), in order, and then the row's elements (see `emit::cuda_rows`).
    RowNormalization,
}

impl Strategy {
    pub fn name(&self) -> &'static str {
        match self {
            Strategy::Loop => "loop",
            Strategy::TiledTranspose { .. } => "tiled transpose",
            Strategy::RowReduction => "row reduction",
            Strategy::ColumnReduction => "column reduction",
            Strategy::Concatenate => "concatenate",
            Strategy::DynamicUpdateSlice => "in-place dynamic-update-slice",
            Strategy::Scatter => "scatter",
            Strategy::RowNormalization => "row normalization",
        }
    }
}

/// A launch: sizes and thread-id maps.
#[derive(Clone, Debug)]
pub struct Launch {
    pub strategy: Strategy,
    pub config: LaunchConfig,
    pub block: [i64; 3],
    pub grid: [i64; 3],
    /// Thread ids → the output element each thread writes.
    pub write_map: IndexingMap,
    /// Thread ids → the index of function `read_from` at which inputs are read. For a loop
    /// this is `write_map` (function 0); for a tiled transpose, the tile read in output
    /// coordinates; for a reduction, the element of the reduced operand.
    pub read_map: IndexingMap,
    pub read_from: usize,
    /// Row reductions and normalizations: the lanes that share one row (32, several warps
    /// for long rows, or fewer for short rows, which put several rows in a warp); 1 for
    /// the other strategies.
    pub row_threads: i64,
    /// Row normalizations: the rows each thread takes (Triton's layout for a tile of
    /// several rows whose warps all lie along the row: each thread holds its columns of R
    /// rows), `r = bl_x * rows_per_block + i * groups + th_x / row_threads` for `i` in
    /// [0, R - 1], `groups` the block's row groups (`block / row_threads`); 1 for the other
    /// strategies.
    pub rows_per_thread: i64,
    /// Launches that run several loops (concatenate, dynamic-update-slice): per loop, the
    /// function computed and its thread-id maps; empty for the other strategies.
    pub parts: Vec<PartLaunch>,
}

/// One loop of a launch with several: function `func` is computed at `read(thread ids)`
/// and stored into output 0 at `write(thread ids)`.
#[derive(Clone, Debug)]
pub struct PartLaunch {
    pub func: usize,
    pub read: IndexingMap,
    pub write: IndexingMap,
}

/// One section of what `threads` prints: a heading and its thread-id maps (the value
/// layer converts it to its `OperandMaps`; the launch does not depend on the value layer).
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    pub label: String,
    /// The operand (or output) the section is about.
    pub index: usize,
    pub name: Option<String>,
    pub maps: Vec<IndexingMap>,
}

/// The thread and block ids of a launch, over their whole extents.
pub fn thread_dims(block: [i64; 3], grid: [i64; 3]) -> Vec<Variable> {
    let names = ["th_x", "th_y", "th_z", "bl_x", "bl_y", "bl_z"];
    let sizes = [block[0], block[1], block[2], grid[0], grid[1], grid[2]];
    names
        .iter()
        .zip(sizes)
        .map(|(n, s)| Variable::new(*n, 0, s - 1))
        .collect()
}

fn th_x() -> Expr {
    Expr::var(0)
}
fn bl_x() -> Expr {
    Expr::var(3)
}
fn c(v: i64) -> Expr {
    Expr::constant(v)
}

fn overflow(what: &str) -> MapError {
    MapError::Overflow(what.to_string())
}

/// `a / b` rounded up, for `a >= 0`, `b > 0`, without the `a + b - 1` that wraps for
/// sizes near 2^63 (a negative grid, a lost chunk loop).
fn ceil_div(a: i64, b: i64) -> i64 {
    a / b + i64::from(a % b != 0)
}

/// `t` delinearized over `sizes` (major to minor); the major-most result has no `mod`
/// when `outer_bounded` (a constraint keeps `t` inside).
fn delinearize(t: Expr, sizes: &[i64]) -> Result<Vec<Expr>, MapError> {
    let mut out = Vec::with_capacity(sizes.len());
    let mut inner = 1i64;
    let mut strides = vec![0i64; sizes.len()];
    for (i, &s) in sizes.iter().enumerate().rev() {
        strides[i] = inner;
        inner = inner
            .checked_mul(s)
            .ok_or_else(|| overflow("a launch size"))?;
    }
    for (i, &s) in sizes.iter().enumerate() {
        let q = t.floordiv(c(strides[i]));
        out.push(if i == 0 { q } else { q.modulo(c(s)) });
    }
    Ok(out)
}

fn finish(map: IndexingMap) -> IndexingMap {
    simplify(&map, &SimplifyLimits::default()).map
}

fn check_config(cfg: &LaunchConfig) -> Result<(), MapError> {
    if !(1..=1024).contains(&cfg.block) {
        return Err(MapError::Other(format!(
            "block={} is not in [1, 1024]",
            cfg.block
        )));
    }
    if !(1..=16).contains(&cfg.vector) {
        return Err(MapError::Other(format!(
            "vector={} is not in [1, 16]",
            cfg.vector
        )));
    }
    if !(1..=64).contains(&cfg.unroll) {
        return Err(MapError::Other(format!(
            "unroll={} is not in [1, 64]",
            cfg.unroll
        )));
    }
    if !(1..=MAX_GRID).contains(&cfg.max_blocks) {
        return Err(MapError::Other(format!(
            "max_blocks={} is not in [1, {MAX_GRID}]",
            cfg.max_blocks
        )));
    }
    Ok(())
}

/// The loop emitter's mapping of `out`, in XLA's form: threads walk the output in physical
/// order, each writing `vector` contiguous elements (`unroll_id`); when a thread handles
/// several vectors (`unroll`, or more elements than `max_blocks` blocks cover), it loops
/// over `chunk_id`, a whole grid apart:
///
/// ```text
/// linear = ((chunk_id * grid + bl_x) * block + th_x) * vector + unroll_id
/// ```
pub fn loop_launch(out: &Tensor, cfg: LaunchConfig) -> Result<Launch, MapError> {
    check_config(&cfg)?;
    let n = out.num_elements()?;
    if n == 0 {
        return Err(MapError::Other(format!("{} has no elements", out.name)));
    }
    let phys = out.physical_dims();
    let mut sizes: Vec<i64> = phys.iter().map(|&d| out.dims[d]).collect();
    let minor = *sizes.last().unwrap_or(&1);
    if minor % cfg.vector != 0 {
        return Err(MapError::Other(format!(
            "vector={} does not divide the minor-most dimension ({minor}) of {}",
            cfg.vector, out.name
        )));
    }
    if let Some(last) = sizes.last_mut() {
        *last /= cfg.vector;
    }
    let vectors = n / cfg.vector;
    let threads = ceil_div(vectors, cfg.unroll);
    let block = cfg.block.min(threads);
    let grid = ceil_div(threads, block).min(cfg.max_blocks);
    let stride = grid
        .checked_mul(block)
        .ok_or_else(|| overflow("the grid"))?;
    let chunks = ceil_div(vectors, stride);
    // every thread's linear index, the last chunk's included, must fit in 64 bits
    chunks
        .checked_mul(stride)
        .ok_or_else(|| overflow("the chunk loop's linear index"))?;
    let dims = thread_dims([block, 1, 1], [grid, 1, 1]);
    let mut ranges = Vec::new();
    let mut t = bl_x().mul(c(block)).add(th_x());
    let nd = dims.len() as u32;
    if chunks > 1 {
        ranges.push(Variable::new("chunk_id", 0, chunks - 1));
        t = Expr::var(nd).mul(c(stride)).add(t);
    }
    let unroll_id = if cfg.vector > 1 {
        ranges.push(Variable::new("unroll_id", 0, cfg.vector - 1));
        Some(Expr::var(nd + ranges.len() as u32 - 1))
    } else {
        None
    };
    let mut parts = delinearize(t, &sizes)?;
    if let (Some(v), Some(last)) = (unroll_id, parts.last_mut()) {
        *last = last.mul(c(cfg.vector)).add(v);
    }
    let mut results = vec![Expr::constant(0); out.rank()];
    for (p, &d) in phys.iter().enumerate() {
        results[d] = parts[p];
    }
    let constraints = vec![(t, Interval::new(0, vectors - 1))];
    let map = finish(IndexingMap::new(dims, ranges, vec![], results, constraints));
    Ok(Launch {
        strategy: Strategy::Loop,
        config: LaunchConfig { block, ..cfg },
        block: [block, 1, 1],
        grid: [grid, 1, 1],
        write_map: map.clone(),
        read_map: map,
        read_from: 0,
        row_threads: 1,
        rows_per_thread: 1,
        parts: vec![],
    })
}

impl Launch {
    /// A launch in words: `row reduction, block 128, grid 2048` (also `dump`'s launch column).
    /// The comment lines `emit` puts above a kernel's source: the launch (with the words of
    /// XLA's default when it chose it), a machine-readable grid and block line, and the
    /// rules that chose it.
    pub fn source_header(&self, default_words: Option<&str>, rules: &[String]) -> String {
        let mut lines = vec![match default_words {
            Some(w) => format!("// launch: {} ({w}, for an H100)", self.describe()),
            None => format!("// launch: {}", self.describe()),
        }];
        lines.push(format!(
            "// grid ({}, {}, {}), block ({}, {}, {})",
            self.grid[0], self.grid[1], self.grid[2], self.block[0], self.block[1], self.block[2]
        ));
        lines.extend(rules.iter().map(|r| format!("//   {r}")));
        let mut out = lines.join("\n");
        out.push('\n');
        out
    }

    pub fn describe(&self) -> String {
        let l = self;
        let mut s = format!(
            "{}, block {}, grid {}",
            l.strategy.name(),
            l.block[0],
            l.grid[0]
        );
        if l.grid[1] > 1 {
            // Independent reduction groups: a row of blocks each.
            s += &format!(" × {} (bl_y: the reduction group)", l.grid[1]);
        }
        if l.config.vector > 1
            && matches!(
                l.strategy,
                Strategy::Loop
                    | Strategy::RowReduction
                    | Strategy::RowNormalization
                    | Strategy::ColumnReduction
                    | Strategy::Concatenate
                    | Strategy::DynamicUpdateSlice
                    | Strategy::Scatter
            )
        {
            s += &format!(", vector {}", l.config.vector);
        }
        if l.strategy == Strategy::RowNormalization && l.row_threads > WARP {
            let rows = l.block[0] / l.row_threads * l.rows_per_thread;
            s += &format!(
                ", {} warps per row, {rows} row{} per block",
                l.row_threads / WARP,
                if rows == 1 { "" } else { "s" }
            );
        }
        if l.strategy == Strategy::RowNormalization && l.rows_per_thread > 1 {
            if l.row_threads <= WARP {
                s += &format!(
                    ", {} rows per block",
                    l.block[0] / l.row_threads * l.rows_per_thread
                );
            }
            s += &format!(", {} rows per thread", l.rows_per_thread);
        }
        if (l.strategy == Strategy::RowReduction || l.strategy == Strategy::RowNormalization)
            && l.row_threads < 32
        {
            s += &format!(
                ", {} lane{} per row, {} rows per warp",
                l.row_threads,
                if l.row_threads == 1 { "" } else { "s" },
                32 / l.row_threads
            );
        }
        if l.chunks() > 1 && (l.strategy == Strategy::Loop || !l.parts.is_empty()) {
            s += &format!(", {} chunks per thread", l.chunks());
            // The grid capped by max_blocks (not only unrolled): say so.
            if l.grid[0] == l.config.max_blocks {
                s += &format!(", max_blocks {}", l.config.max_blocks);
            }
        }
        s
    }

    /// Threads a block and blocks, each over all three dimensions.
    pub fn size(&self) -> (i64, i64) {
        let all = |d: &[i64; 3]| d.iter().fold(1i64, |a, &b| a.saturating_mul(b));
        (all(&self.block), all(&self.grid))
    }

    /// How many vectors each thread of a loop handles, a grid apart (`chunk_id`'s extent).
    pub fn chunks(&self) -> i64 {
        self.write_map
            .ranges
            .iter()
            .find(|v| v.name == "chunk_id")
            .map_or(1, |v| v.bounds.hi - v.bounds.lo + 1)
    }
}

/// The output dims of a transpose worth tiling: `a`, the output dim read along the minor
/// dim of some input, and `b`, the output's own minor dim; `None` when every input is read
/// along the output's minor dim.
pub fn transpose_dims(spec: &KernelSpec) -> Result<Option<(usize, usize)>, MapError> {
    let Some(b) = spec.output.minor_dim() else {
        return Ok(None);
    };
    for acc in spec.input_accesses()? {
        // A transpose: the input holds the output's minor dim too, just not as its minor
        // dim (a broadcast that does not hold it at all needs no tile).
        let holds_b = acc.map.results.iter().any(|r| r.as_var() == Some(b as u32));
        if let (Some(a), true) = (tiled_dim(spec, &acc), holds_b) {
            if a != b {
                return Ok(Some((a, b)));
            }
        }
    }
    Ok(None)
}

/// The output dim that the input's minor dim is read along, when the access reads it as a
/// plain output dim.
fn tiled_dim(spec: &KernelSpec, acc: &InputAccess) -> Option<usize> {
    let t = spec.inputs.get(acc.input)?;
    let m = t.minor_dim()?;
    let e = *acc.map.results.get(m)?;
    let v = e.as_var()? as usize;
    (v < acc.map.dims.len() && t.dims[m] > 1).then_some(v)
}

/// Whether an input access goes through the shared-memory tile of a tiled transpose.
pub fn reads_through_tile(spec: &KernelSpec, launch: &Launch, acc: &InputAccess) -> bool {
    match launch.strategy {
        // A load under a condition (pad) or at run-time offsets is not staged in a tile:
        // the tile is filled unconditionally.
        Strategy::TiledTranspose { a, b } => {
            !spec
                .functions
                .first()
                .is_some_and(|f| f.body.has_conditional())
                && tiled_dim(spec, acc) == Some(a)
                && acc.map.results.iter().any(|r| r.as_var() == Some(b as u32))
        }
        _ => false,
    }
}

/// The map from thread ids to the elements an input access reads, in the input's logical
/// coordinates.
pub fn thread_to_input(
    spec: &KernelSpec,
    launch: &Launch,
    acc: &InputAccess,
) -> Result<IndexingMap, MapError> {
    let m = match launch.strategy {
        Strategy::TiledTranspose { .. } if reads_through_tile(spec, launch, acc) => {
            compose(&launch.read_map, &acc.map)?
        }
        Strategy::TiledTranspose { .. } | Strategy::Loop | Strategy::RowNormalization => {
            compose(&launch.write_map, &acc.map)?
        }
        Strategy::RowReduction | Strategy::ColumnReduction => compose(&launch.read_map, &acc.map)?,
        // The accesses of a concatenate are from the output (so composed with the write
        // maps); a dynamic-update-slice's from the update (composed with the read map).
        // The part whose slice the access covers: composed with the others' write maps,
        // its constraint on the concatenated dimension leaves nothing.
        Strategy::Concatenate => {
            for p in &launch.parts {
                let m = finish(compose(&p.write, &acc.map)?);
                if !m.is_known_empty() {
                    return Ok(m);
                }
            }
            return Err(MapError::Other(format!(
                "no operand of {} reads input {} through {}",
                spec.name, acc.input, acc.map
            )));
        }
        Strategy::DynamicUpdateSlice | Strategy::Scatter => compose(&launch.read_map, &acc.map)?,
    };
    Ok(finish(m))
}

/// The input accesses as seen by a launch: for loops and transposes from the output, for
/// reductions from the reduced operand's index space.
pub fn accesses(spec: &KernelSpec, launch: &Launch) -> Result<Vec<InputAccess>, MapError> {
    if launch.read_from == 0 || !launch.parts.is_empty() {
        return spec.input_accesses();
    }
    let f = spec
        .functions
        .get(launch.read_from)
        .ok_or_else(|| MapError::Other("no reduced function".into()))?;
    spec.accesses_from(launch.read_from, &IndexingMap::identity(&f.dims))
}

/// XLA's tiled transpose: 32×32 tiles of output dims `a` × `b`, a block of 128 threads
/// (4 rows of 32), each thread handling 8 rows of the tile (`row`).
pub fn transpose_launch(out: &Tensor, a: usize, b: usize) -> Result<Launch, MapError> {
    let rows_per_pass = 128 / TILE;
    let (da, db) = (out.dims[a], out.dims[b]);
    let (na, nb) = (ceil_div(da, TILE), ceil_div(db, TILE));
    let others: Vec<usize> = out
        .physical_dims()
        .into_iter()
        .filter(|&d| d != a && d != b)
        .collect();
    let mut grid_sizes: Vec<i64> = others.iter().map(|&d| out.dims[d]).collect();
    grid_sizes.push(na);
    grid_sizes.push(nb);
    let grid = grid_sizes
        .iter()
        .try_fold(1i64, |x, &y| x.checked_mul(y))
        .ok_or_else(|| overflow("the grid"))?;
    let dims = thread_dims([128, 1, 1], [grid, 1, 1]);
    let row = Expr::var(6);
    let ranges = vec![Variable::new("row", 0, TILE / rows_per_pass - 1)];
    let blk = delinearize(bl_x(), &grid_sizes)?;
    let tile_a = blk[blk.len() - 2];
    let tile_b = blk[blk.len() - 1];
    let lane = th_x().modulo(c(TILE));
    let line = th_x().floordiv(c(TILE)).add(row.mul(c(rows_per_pass)));
    let build = |ea: Expr, eb: Expr| -> IndexingMap {
        let mut results = vec![Expr::constant(0); out.rank()];
        for (i, &d) in others.iter().enumerate() {
            results[d] = blk[i];
        }
        results[a] = ea;
        results[b] = eb;
        let constraints = vec![
            (ea, Interval::new(0, da - 1)),
            (eb, Interval::new(0, db - 1)),
        ];
        finish(IndexingMap::new(
            dims.clone(),
            ranges.clone(),
            vec![],
            results,
            constraints,
        ))
    };
    let write_map = build(tile_a.mul(c(TILE)).add(line), tile_b.mul(c(TILE)).add(lane));
    let read_map = build(tile_a.mul(c(TILE)).add(lane), tile_b.mul(c(TILE)).add(line));
    Ok(Launch {
        strategy: Strategy::TiledTranspose { a, b },
        config: LaunchConfig {
            block: 128,
            vector: 1,
            unroll: 1,
            ..Default::default()
        },
        block: [128, 1, 1],
        grid: [grid, 1, 1],
        write_map,
        read_map,
        read_from: 0,
        row_threads: 1,
        rows_per_thread: 1,
        parts: vec![],
    })
}

/// Row or column reduction launch for a spec whose root is a reduction.
pub fn reduction_launch(spec: &KernelSpec, cfg: LaunchConfig) -> Result<Launch, MapError> {
    check_config(&cfg)?;
    let (rmap, callee) = spec
        .root_reduction()
        .ok_or_else(|| MapError::Other(format!("{} is not a reduction", spec.name)))?;
    // Each callee dim is an output dim (kept) or a range variable (reduced).
    let nd = rmap.dims.len() as u32;
    let mut kept_of: Vec<Option<usize>> = Vec::new();
    let mut reduced_of: Vec<Option<usize>> = Vec::new();
    for &e in &rmap.results {
        match e.as_var() {
            Some(v) if v < nd => {
                kept_of.push(Some(v as usize));
                reduced_of.push(None);
            }
            Some(v) => {
                kept_of.push(None);
                reduced_of.push(Some((v - nd) as usize));
            }
            None => {
                return Err(MapError::Other(
                    "the reduction reads its operand through a non-trivial map".into(),
                ))
            }
        }
    }
    let out_sizes: Vec<i64> = spec.output.dims.clone();
    let red_sizes: Vec<i64> = rmap
        .ranges
        .iter()
        .map(|v| v.bounds.hi - v.bounds.lo + 1)
        .collect();
    let n_out = spec.output.num_elements()?;
    let n_red = red_sizes
        .iter()
        .try_fold(1i64, |x, &y| x.checked_mul(y))
        .ok_or_else(|| overflow("the reduction"))?;
    let row = *reduced_of.last().unwrap_or(&None) != None;
    let nv = 6u32;
    if row {
        // XLA's row reduction: a row's elements are read `vector` at a time (unroll_id);
        // a short row whose vectors divide the warp gets that many lanes, so one warp
        // reduces 32 / lanes rows at once (a row of 16 read 4 at a time: 4 lanes, 8 rows).
        if n_red % cfg.vector != 0 {
            return Err(MapError::Other(format!(
                "vector={} does not divide the reduced row ({n_red} elements)",
                cfg.vector
            )));
        }
        let per_row = n_red / cfg.vector;
        let warps = (cfg.block / WARP).max(1);
        let block = warps * WARP;
        // A long row gets XLA's threads along it (`xla_row_threads`: 64 for a row of 1000,
        // 256 for 4096), several warps, where they divide the block and each has a vector
        // to read; a row the row kernel folds with reductions nested in it, and a
        // multi-output reduction, keep a warp (their trees are a warp's).
        let row_threads = if per_row < WARP && WARP % per_row == 0 {
            per_row
        } else {
            match long_row_threads(spec, n_red, cfg.vector)? {
                Some(t) if block % t == 0 => t,
                _ => WARP,
            }
        };
        let rows_per_block = (block / row_threads).max(1);
        let grid = ceil_div(n_out, rows_per_block);
        let out_lin = bl_x()
            .mul(c(rows_per_block))
            .add(th_x().floordiv(c(row_threads)));
        let mut rs = vec![Variable::new("col", 0, ceil_div(per_row, row_threads) - 1)];
        let mut lin = th_x()
            .modulo(c(row_threads))
            .add(Expr::var(nv).mul(c(row_threads)));
        if cfg.vector > 1 {
            rs.push(Variable::new("unroll_id", 0, cfg.vector - 1));
            lin = lin.mul(c(cfg.vector)).add(Expr::var(nv + 1));
        }
        let lane0 = vec![(th_x().modulo(c(row_threads)), Interval::point(0))];
        finish_reduction(
            spec,
            cfg,
            callee,
            &rmap,
            (&kept_of, &reduced_of),
            (&out_sizes, &red_sizes, n_out, n_red),
            (block, grid, row_threads, rs),
            (out_lin, lin, out_lin, lane0),
            (true, vec![]),
        )
    } else {
        // XLA's column reduction: a block reduces 32 × `vector` neighbouring columns
        // through a 32×32 tile. Thread (th_x mod 32, th_x floordiv 32) sums rows th_x
        // floordiv 32, + 32, .. of the `vector` adjacent columns (th_x mod 32) * vector +
        // unroll_id (a warp reads 32 × vector neighbouring elements of one row); the partial
        // sums go through shared memory transposed, and warp w reduces its columns' 32
        // partial sums with shuffles; its lane 0 writes them.
        let v = cfg.vector;
        let mut ranges = vec![Variable::new("row", 0, ceil_div(n_red, TILE) - 1)];
        let mut read_col = bl_x().mul(c(WARP)).add(th_x().modulo(c(WARP)));
        // The write side: warp w holds column w (of each vector).
        let mut write_col = bl_x().mul(c(WARP)).add(th_x().floordiv(c(WARP)));
        let mut write_ranges = vec![];
        if v > 1 {
            ranges.push(Variable::new("unroll_id", 0, v - 1));
            read_col = read_col.mul(c(v)).add(Expr::var(nv + 1));
            write_ranges.push(Variable::new("unroll_id", 0, v - 1));
            write_col = write_col.mul(c(v)).add(Expr::var(nv));
        }
        let red_lin = Expr::var(nv).mul(c(TILE)).add(th_x().floordiv(c(WARP)));
        let lane0 = vec![(th_x().modulo(c(WARP)), Interval::point(0))];
        let grid = ceil_div(
            n_out,
            WARP.checked_mul(v).ok_or_else(|| overflow("the grid"))?,
        );
        finish_reduction(
            spec,
            cfg,
            callee,
            &rmap,
            (&kept_of, &reduced_of),
            (&out_sizes, &red_sizes, n_out, n_red),
            (WARP * TILE, grid, WARP, ranges),
            (read_col, red_lin, write_col, lane0),
            (false, write_ranges),
        )
    }
}

/// The maps of a reduction launch: `read_out` and `red_lin` are the output element and the
/// reduced element a thread reads (linear), `write_out` the output element it writes.
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn finish_reduction(
    spec: &KernelSpec,
    cfg: LaunchConfig,
    callee: usize,
    rmap: &IndexingMap,
    (kept_of, reduced_of): (&[Option<usize>], &[Option<usize>]),
    (out_sizes, red_sizes, n_out, n_red): (&[i64], &[i64], i64, i64),
    (block, grid, row_threads, ranges): (i64, i64, i64, Vec<Variable>),
    (read_out, red_lin, write_out, write_constraints): (Expr, Expr, Expr, Vec<(Expr, Interval)>),
    (row, write_ranges): (bool, Vec<Variable>),
) -> Result<Launch, MapError> {
    let nd = rmap.dims.len() as u32;
    let callee_dims = spec.functions[callee].dims.clone();
    let dims = thread_dims([block, 1, 1], [grid, 1, 1]);
    let read_idx = if out_sizes.is_empty() {
        vec![]
    } else {
        delinearize(read_out, out_sizes)?
    };
    let write_idx = if out_sizes.is_empty() {
        vec![]
    } else {
        delinearize(write_out, out_sizes)?
    };
    let red_idx = delinearize(red_lin, red_sizes)?;
    let callee_idx: Vec<Expr> = (0..callee_dims.len())
        .map(|i| match (kept_of[i], reduced_of[i]) {
            (Some(k), _) => read_idx[k],
            (_, Some(r)) => red_idx[r].add(c(rmap.ranges[r].bounds.lo)),
            _ => Expr::constant(0),
        })
        .collect();
    let mut read_constraints = vec![
        (read_out, Interval::new(0, n_out - 1)),
        (red_lin, Interval::new(0, n_red - 1)),
    ];
    read_constraints.extend(rmap.constraints.iter().map(|&(e, iv)| {
        (
            e.substitute(&mut |v| {
                if v < nd {
                    read_idx[v as usize]
                } else {
                    red_idx[(v - nd) as usize]
                }
            }),
            iv,
        )
    }));
    let read_map = finish(IndexingMap::new(
        dims.clone(),
        ranges,
        vec![],
        callee_idx,
        read_constraints,
    ));
    let mut wc = vec![(write_out, Interval::new(0, n_out - 1))];
    wc.extend(write_constraints);
    let write_map = finish(IndexingMap::new(dims, write_ranges, vec![], write_idx, wc));
    Ok(Launch {
        strategy: if row {
            Strategy::RowReduction
        } else {
            Strategy::ColumnReduction
        },
        config: LaunchConfig { block, ..cfg },
        block: [block, 1, 1],
        grid: [grid, 1, 1],
        write_map,
        read_map,
        read_from: callee,
        row_threads,
        rows_per_thread: 1,
        parts: vec![],
    })
}

/// XLA's rule for tiling a transpose whose tiled dims have extents `da` and `db`: both at
/// least 16, or both at least 8 with at least 64 × 128 elements in the tile plane; a
/// smaller transpose wastes most of each 32×32 tile and runs as a loop.
pub fn worth_tiling(da: i64, db: i64) -> bool {
    (da >= 16 && db >= 16) || (da >= 8 && db >= 8 && da.saturating_mul(db) >= 64 * 128)
}

/// A tensor of `dims` laid out like `like` (the loop over a concatenated operand or an
/// update walks it in the output's physical order).
fn shaped_like(name: &str, dims: &[i64], like: &Tensor) -> Tensor {
    Tensor {
        name: name.to_string(),
        elem: like.elem,
        dims: dims.to_vec(),
        minor_to_major: like.minor_to_major.clone(),
    }
}

/// `base` (thread ids → an index of some shape) with `results` instead, the constraints
/// `extra` added and the runtime variables `runtimes`.
fn with_results(
    base: &IndexingMap,
    runtimes: Vec<Variable>,
    results: Vec<Expr>,
    extra: Vec<(Expr, Interval)>,
) -> IndexingMap {
    let mut constraints = base.constraints.clone();
    constraints.extend(extra);
    finish(IndexingMap::new(
        base.dims.clone(),
        base.ranges.clone(),
        runtimes,
        results,
        constraints,
    ))
}

/// XLA's concatenate emitter: the launch is the loop over the largest operand; operand
/// `k`'s loop reads the threads' index where it lies inside operand `k`'s shape and writes
/// it at `offset_k` along the concatenated dimension:
///
/// ```text
/// operand k: thread → (loop map of the largest operand), with each coordinate < operand k's
/// output:    thread → the same, + offset_k along `dim`
/// ```
pub fn concat_launch(spec: &KernelSpec, cfg: LaunchConfig) -> Result<Launch, MapError> {
    let Root::Concatenate { dim, parts } = &spec.root else {
        return Err(MapError::Other(format!(
            "{} is not a concatenate",
            spec.name
        )));
    };
    let mut largest: Option<(i64, usize)> = None;
    for (k, &(f, _)) in parts.iter().enumerate() {
        let n = spec
            .functions
            .get(f)
            .ok_or_else(|| MapError::Other(format!("no function {f}")))?
            .dims
            .iter()
            .try_fold(1i64, |a, &d| a.checked_mul(d))
            .ok_or_else(|| overflow("an operand's size"))?;
        if largest.is_none_or(|(m, _)| n > m) {
            largest = Some((n, k));
        }
    }
    let (_, big) = largest.ok_or_else(|| MapError::Other("a concatenate of nothing".into()))?;
    let big_dims = spec.functions[parts[big].0].dims.clone();
    let base = loop_launch(&shaped_like("largest", &big_dims, &spec.output), cfg)?;
    let mut out = Vec::new();
    for &(f, off) in parts {
        let fd = &spec.functions[f].dims;
        let extra: Vec<(Expr, Interval)> = base
            .write_map
            .results
            .iter()
            .zip(fd)
            .zip(&big_dims)
            .filter(|((_, n), b)| n < b)
            .map(|((&r, &n), _)| (r, Interval::new(0, n - 1)))
            .collect();
        let read = with_results(
            &base.write_map,
            vec![],
            base.write_map.results.clone(),
            extra,
        );
        let mut wr = read.results.clone();
        wr[*dim] = wr[*dim].add(c(off));
        let write = with_results(&read, vec![], wr, vec![]);
        out.push(PartLaunch {
            func: f,
            read,
            write,
        });
    }
    Ok(Launch {
        strategy: Strategy::Concatenate,
        write_map: out[0].write.clone(),
        read_map: out[0].read.clone(),
        read_from: out[0].func,
        parts: out,
        ..base
    })
}

/// The in-place dynamic-update-slice: the loop over the update (function 0's index
/// space); the output is written at the update's index plus the start indices, runtime
/// variables `rt0, ..` already clamped to `[0, dim - update_dim]`.
pub fn dus_launch(spec: &KernelSpec, cfg: LaunchConfig) -> Result<Launch, MapError> {
    if !matches!(spec.root, Root::DynamicUpdateSlice { .. }) {
        return Err(MapError::Other(format!(
            "{} is not a dynamic-update-slice",
            spec.name
        )));
    }
    let upd = spec
        .functions
        .first()
        .ok_or_else(|| MapError::Other("no update function".into()))?
        .dims
        .clone();
    if upd.len() != spec.output.rank() || upd.iter().zip(&spec.output.dims).any(|(u, o)| u > o) {
        return Err(MapError::Other(format!(
            "the update of {} does not fit in its output",
            spec.name
        )));
    }
    let base = loop_launch(&shaped_like("update", &upd, &spec.output), cfg)?;
    let read = base.write_map.clone();
    let nv = read.dims.len() + read.ranges.len();
    let runtimes: Vec<Variable> = upd
        .iter()
        .zip(&spec.output.dims)
        .enumerate()
        .map(|(d, (u, o))| Variable::new(format!("rt{d}"), 0, o - u))
        .collect();
    let wr: Vec<Expr> = read
        .results
        .iter()
        .enumerate()
        .map(|(d, &r)| r.add(Expr::var((nv + d) as u32)))
        .collect();
    let write = with_results(&read, runtimes, wr, vec![]);
    Ok(Launch {
        strategy: Strategy::DynamicUpdateSlice,
        write_map: write.clone(),
        read_map: read.clone(),
        read_from: 0,
        parts: vec![PartLaunch {
            func: 0,
            read,
            write,
        }],
        ..base
    })
}

/// The scatter's launch: the loop over the updates (function 0's index space); update
/// element `u` lands on operand element `start + window(u)`, where `start` holds a runtime
/// variable `rt<o>` for each operand dimension `o` that the index vector starts (read from
/// the indices at run time; the update is skipped unless its window fits, so the variable
/// lies in `[0, dim - window]` wherever a write happens) and `window(u)` is `u`'s window
/// coordinate (0 on inserted dimensions).
pub fn scatter_launch(spec: &KernelSpec, cfg: LaunchConfig) -> Result<Launch, MapError> {
    let g = spec.scatter_geometry().ok_or_else(|| {
        MapError::Other(format!(
            "{}: the scatter's dimension numbers do not fit its shapes",
            spec.name
        ))
    })?;
    let _ = g;
    let upd = spec.functions[0].dims.clone();
    let base = loop_launch(&Tensor::row_major("updates", spec.output.elem, &upd), cfg)?;
    let read = base.write_map.clone();
    let write = scatter_write(spec, &read)?;
    Ok(Launch {
        strategy: Strategy::Scatter,
        write_map: write.clone(),
        read_map: read.clone(),
        read_from: 0,
        parts: vec![PartLaunch {
            func: 0,
            read,
            write,
        }],
        ..base
    })
}

/// A scatter's store map from `read` (some index space → the update element): the
/// operand element the update lands on, with runtime variables `rt<o>` for the starts.
pub fn scatter_write(spec: &KernelSpec, read: &IndexingMap) -> Result<IndexingMap, MapError> {
    let g = spec.scatter_geometry().ok_or_else(|| {
        MapError::Other(format!(
            "{}: the scatter's dimension numbers do not fit its shapes",
            spec.name
        ))
    })?;
    let nv = (read.dims.len() + read.ranges.len()) as u32;
    let mut runtimes = Vec::new();
    let mut results = Vec::new();
    for (o, &(w, size)) in g.window.iter().enumerate() {
        let mut e = w.map_or(c(0), |j| read.results[j]);
        if g.starts.contains(&o) {
            e = e.add(Expr::var(nv + runtimes.len() as u32));
            runtimes.push(Variable::new(
                format!("rt{o}"),
                0,
                spec.output.dims[o] - size,
            ));
        }
        results.push(e);
    }
    Ok(with_results(read, runtimes, results, vec![]))
}

/// What `threads` prints for a launch with several loops: per part, the thread → output
/// map, the thread → part index map, and the thread → input maps of what the part reads.
pub fn part_sections(
    spec: &KernelSpec,
    launch: &Launch,
    describe: &str,
) -> Result<Vec<Section>, MapError> {
    let mut out = Vec::new();
    let sec = |label: String, index: usize, maps: Vec<IndexingMap>| Section {
        label,
        index,
        name: None,
        maps,
    };
    let dus = launch.strategy != Strategy::Concatenate;
    let starts = if launch.strategy == Strategy::Scatter {
        "rt<d> is the start index read for operand dimension d; an update whose window does not fit is skipped"
    } else {
        "rt0, .. are the start indices, clamped"
    };
    for (n, p) in launch.parts.iter().enumerate() {
        let f = spec
            .functions
            .get(p.func)
            .ok_or_else(|| MapError::Other(format!("no function {}", p.func)))?;
        if dus {
            out.push(sec(
                format!("thread → output ({describe}; {starts})"),
                0,
                vec![p.write.clone()],
            ));
            out.push(sec(
                format!("thread → update ({})", f.name),
                0,
                vec![p.read.clone()],
            ));
        } else {
            out.push(sec(
                format!("operand {n} ({}): thread → output ({describe})", f.name),
                n,
                vec![p.write.clone()],
            ));
            out.push(sec(
                format!("operand {n} ({}): thread → operand", f.name),
                n,
                vec![p.read.clone()],
            ));
        }
        for acc in spec.accesses_from(p.func, &IndexingMap::identity(&f.dims))? {
            let m = finish(compose(&p.read, &acc.map)?);
            let t = &spec.inputs[acc.input];
            let label = if dus {
                format!("thread → input {} ({})", acc.input, t.name)
            } else {
                format!("operand {n}: thread → input {} ({})", acc.input, t.name)
            };
            match out.iter_mut().find(|x| x.label == label) {
                Some(x) if !x.maps.contains(&m) => x.maps.push(m),
                Some(_) => {}
                None => out.push(sec(label, acc.input, vec![m])),
            }
        }
    }
    Ok(out)
}

/// Which strategy XLA would pick for this kernel, unless `tiled` says otherwise.
pub fn choose(
    spec: &KernelSpec,
    cfg: LaunchConfig,
    tiled: Option<bool>,
) -> Result<Launch, MapError> {
    match spec.root {
        Root::Concatenate { .. } => return concat_launch(spec, cfg),
        Root::DynamicUpdateSlice { .. } => return dus_launch(spec, cfg),
        Root::Scatter { .. } => return scatter_launch(spec, cfg),
        Root::Elementwise => {}
    }
    if spec.root_reduction().is_some() {
        // Independent reduction groups: one row of blocks each (`bl_y` is the group).
        return reduction_launch(spec, cfg).map(|mut l| {
            l.grid[1] = spec.groups() as i64;
            l
        });
    }
    if tiled.is_none() && super::rows::applies(spec).unwrap_or(false) {
        if let Some(l) = row_normalization_launch(spec, cfg)? {
            return Ok(l);
        }
    }
    if tiled != Some(false) {
        if let Some((a, b)) = transpose_dims(spec)? {
            let (da, db) = (spec.output.dims[a], spec.output.dims[b]);
            if tiled == Some(true) || worth_tiling(da, db) {
                return transpose_launch(&spec.output, a, b);
            }
        }
        if tiled == Some(true) {
            return Err(MapError::Other(format!(
                "{} reads every input along the output's minor dimension: there is no transpose to tile",
                spec.name
            )));
        }
    }
    loop_launch(&spec.output, cfg)
}

/// Where a launch writes further output `n + 1` of a tuple root.
#[derive(Clone, Debug)]
pub struct OutputWrite {
    /// Thread ids → the element of the output each thread writes.
    pub map: IndexingMap,
    /// Written while the inputs are read (a transpose's phase 1, in the input's layout; a
    /// reduction's loop over the reduced elements) rather than with output 0.
    pub while_reading: bool,
    /// The reduction group, the value of `bl_y` in the blocks that write it (0 elsewhere).
    pub group: usize,
}

/// `m` in the blocks of reduction group `g` (`bl_y = g`).
pub fn in_group(m: &IndexingMap, g: usize) -> IndexingMap {
    let mut m = m.clone();
    if let Some(v) = m.dims.get_mut(4) {
        v.bounds = Interval::point(g as i64);
    }
    finish(m)
}

/// The thread → output maps of a tuple root's further outputs under `launch` (XLA's
/// multi-output emitters):
///
/// - **loop**: the output's map from output 0's index after the loop's map (the same
///   element, a bitcast of it);
/// - **tiled transpose**: a side output in the transposed operand's shape is written in
///   phase 1, from the tile read (the input's layout: coalesced); the others with output 0
///   in phase 2;
/// - **reductions**: a side output in the reduced operand's shape where the reduction
///   reads (each element is read once), a further reduction or an output of the reduced
///   shape where output 0 is written; each in its group's blocks (`bl_y`).
pub fn more_output_writes(
    spec: &KernelSpec,
    launch: &Launch,
) -> Result<Vec<OutputWrite>, MapError> {
    let mut out = Vec::new();
    for o in &spec.more_outputs {
        let w = match launch.strategy {
            Strategy::Loop if !o.is_side_of_reduction() => OutputWrite {
                map: finish(compose(&launch.write_map, &o.map)?),
                while_reading: false,
                group: 0,
            },
            Strategy::TiledTranspose { .. } if !o.is_side_of_reduction() => {
                let through_tile = spec.inputs.iter().enumerate().any(|(k, _)| {
                    let acc = InputAccess {
                        input: k,
                        map: o.map.clone(),
                    };
                    reads_through_tile(spec, launch, &acc)
                });
                let from = if through_tile {
                    &launch.read_map
                } else {
                    &launch.write_map
                };
                OutputWrite {
                    map: finish(compose(from, &o.map)?),
                    while_reading: through_tile,
                    group: 0,
                }
            }
            Strategy::RowReduction | Strategy::ColumnReduction => {
                let (m, reading) = if o.is_side_of_reduction() {
                    let (rmap, _) = spec.root_reduction().ok_or_else(|| {
                        MapError::Other(format!("{} is not a reduction", spec.name))
                    })?;
                    if o.map.results != rmap.results || o.map.ranges.len() != rmap.ranges.len() {
                        return Err(MapError::Other(format!(
                            "{}: the side output {} is not read by the reduction",
                            spec.name, o.tensor.name
                        )));
                    }
                    (launch.read_map.clone(), true)
                } else {
                    (finish(compose(&launch.write_map, &o.map)?), false)
                };
                OutputWrite {
                    map: in_group(&m, o.group),
                    while_reading: reading,
                    group: o.group,
                }
            }
            _ => {
                return Err(MapError::Other(format!(
                    "{}: the {} launch writes one output; {} is a further output of a tuple root",
                    spec.name,
                    launch.strategy.name(),
                    o.tensor.name
                )))
            }
        };
        out.push(w);
    }
    Ok(out)
}

/// What `threads` adds for a tuple root's further outputs: per output, its thread →
/// output map (with its group's `bl_y`), and the thread → input maps of what it reads that
/// the sections of output 0 do not show.
pub fn more_output_sections(spec: &KernelSpec, launch: &Launch) -> Result<Vec<Section>, MapError> {
    let mut out: Vec<Section> = Vec::new();
    let groups = spec.groups();
    for (n, (o, w)) in spec
        .more_outputs
        .iter()
        .zip(more_output_writes(spec, launch)?)
        .enumerate()
    {
        let mut how = Vec::new();
        if w.while_reading {
            how.push(match launch.strategy {
                Strategy::TiledTranspose { .. } => {
                    "phase 1, from the tile read: the input's layout"
                }
                _ => "written where the reduction reads it",
            });
        }
        let group = format!("group {}: bl_y = {}", w.group, w.group);
        if groups > 1 {
            how.push(&group);
        }
        out.push(Section {
            label: format!(
                "thread → output {} ({}){}",
                n + 1,
                o.tensor.name,
                if how.is_empty() {
                    String::new()
                } else {
                    format!(", {}", how.join("; "))
                }
            ),
            index: n + 1,
            name: None,
            maps: vec![w.map.clone()],
        });
        // A further reduction reads its operand with the launch's read map (in its group);
        // any other output reads from where it is written.
        let reduced = match &spec.functions[o.func].body {
            Body::Reduce { func, .. } => Some(*func),
            Body::Convert(_, inner) => match &**inner {
                Body::Reduce { func, .. } => Some(*func),
                _ => None,
            },
            _ => None,
        };
        let reads: Vec<(IndexingMap, Vec<InputAccess>)> = match reduced {
            Some(func) => vec![(
                in_group(&launch.read_map, w.group),
                spec.accesses_from(func, &IndexingMap::identity(&spec.functions[func].dims))?,
            )],
            None => vec![(
                w.map.clone(),
                spec.accesses_from(o.func, &IndexingMap::identity(&o.tensor.dims))?,
            )],
        };
        for (from, accs) in reads {
            for acc in accs {
                let m = finish(compose(&from, &acc.map)?);
                let t = &spec.inputs[acc.input];
                let label = format!(
                    "output {}: thread → operand {} ({})",
                    n + 1,
                    acc.input,
                    t.name
                );
                match out.iter_mut().find(|x| x.label == label) {
                    Some(x) if !x.maps.contains(&m) => x.maps.push(m),
                    Some(_) => {}
                    None => out.push(Section {
                        label,
                        index: acc.input,
                        name: None,
                        maps: vec![m],
                    }),
                }
            }
        }
    }
    Ok(out)
}

/// XLA's most warps in a block-level fusion's block (`GetNumWarps`, gpu_indexing_
/// performance_model.cc: 1, 2, 4 or 8 by the largest live tile), and the most ixmap's rule
/// gives a row.
pub const XLA_MAX_WARPS: i64 = 8;

/// Elements a thread of a row normalization holds at most under ixmap's rule (XLA's
/// Triton tiles in the H100 dumps hold 16 to 32 a thread: a layer norm's 4 rows of 1024 on
/// 4 warps, an RMS norm's 4 rows of 2048 on 8).
pub const ROW_ELEMENTS_PER_THREAD: i64 = 32;

/// How a row normalization splits its rows among warps: warps per row, and XLA's threads
/// a block where XLA's tiling gives them; `rule` says where they came from (the launch's
/// rule line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowSplit {
    pub warps_per_row: i64,
    /// Rows a thread takes ([`Launch::rows_per_thread`]): Triton's layout of XLA's tile,
    /// on XLA's block; 1 otherwise.
    pub rows_per_thread: i64,
    /// XLA's block (its `num_warps` × 32) when the fusion's backend_config gave the split.
    pub block: Option<i64>,
    pub rule: String,
}

/// The warps per row of a row normalization of rows of `cols` elements:
///
/// - from XLA, where the fusion's `backend_config` prints a `block_level_fusion_config`
///   (a Triton fusion, [`crate::gpu::spec::XlaTile`]) whose output tile is whole rows:
///   the tile's rows (`elements / cols`) are a block's rows and its `num_warps` the
///   block's warps, shared evenly among them (2 warps a row for the RMS norm's 8 warps on
///   4 rows of 2048). Triton lays the tile out itself (its blocked layout may spread the
///   warps along the row, each thread holding several rows); ixmap keeps XLA's threads
///   and rows a block and gives each row its share of the warps. Fewer warps than rows
///   in the tile: a warp a row, XLA's block;
/// - otherwise ixmap's rule: a warp a row up to 1024 elements, then the fewest warps (a
///   power of two, at most [`XLA_MAX_WARPS`]) that leave each thread at most
///   [`ROW_ELEMENTS_PER_THREAD`] elements (XLA's Triton softmax has no row-length rule of
///   its own: its cost model picks the tile, `GetNumWarps` the warps).
pub fn row_split(spec: &KernelSpec, cols: i64) -> RowSplit {
    if let Some(t) = &spec.xla_tile {
        let elems = t.elements();
        if cols > 0 && elems >= cols && elems % cols == 0 && t.num_warps <= 32 {
            let tile_rows = elems / cols;
            let shape = t
                .sizes
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join("x");
            let block = t.num_warps * WARP;
            // XLA's warps shared among the tile's rows.
            let per_row = if t.num_warps % tile_rows == 0 {
                t.num_warps / tile_rows
            } else {
                1
            };
            // Triton's layout where the rows of a thread share an operand broadcast along
            // the rows (a norm's scale or bias: one vector of it a thread, not one a row)
            // and the row's warps meet in shared memory either way (several warps a row):
            // it takes no barrier a warp a row would not. Otherwise the rows share the
            // warps (a warp a row needs no shared memory: the layer norm's 4 warps on 4
            // rows of 1024 ran at 0.94x XLA's time on 2026-11-27).
            let layout =
                if per_row > 1 && super::rows::reads_broadcast_along_rows(spec).unwrap_or(false) {
                    triton_row_layout(cols, tile_rows, t.num_warps, narrowest_vector(spec))
                } else {
                    None
                };
            if let Some((along, rows_per_thread)) =
                layout.filter(|&(_, r)| r > 1 && r <= MAX_ROWS_PER_THREAD)
            {
                return RowSplit {
                    warps_per_row: along,
                    rows_per_thread,
                    block: Some(block),
                    rule: format!(
                        "row normalization: XLA's tiling from backend_config (block_level_fusion_config: {} warps, output tile {shape}, {tile_rows} row{} of {cols}) in Triton's blocked layout, as the fusion reads an operand broadcast along the rows and a row takes several warps: {along} warp{} along the row, each thread holding its columns of {rows_per_thread} row{} (one vector of the broadcast operand for all of them), blocks of {block} threads",
                        t.num_warps,
                        if tile_rows == 1 { "" } else { "s" },
                        if along == 1 { "" } else { "s" },
                        if rows_per_thread == 1 { "" } else { "s" },
                    ),
                };
            }
            return RowSplit {
                warps_per_row: per_row,
                rows_per_thread: 1,
                block: Some(block),
                rule: format!(
                    "row normalization: XLA's tiling from backend_config (block_level_fusion_config: {} warps, output tile {shape}, {tile_rows} row{} of {cols}): {per_row} warp{} a row, blocks of {block} threads",
                    t.num_warps,
                    if tile_rows == 1 { "" } else { "s" },
                    if per_row == 1 { "" } else { "s" },
                ),
            };
        }
    }
    let mut w = 1;
    while w < XLA_MAX_WARPS && cols > ROW_ELEMENTS_PER_THREAD * WARP * w {
        w *= 2;
    }
    RowSplit {
        warps_per_row: w,
        rows_per_thread: 1,
        block: None,
        rule: if w == 1 {
            format!(
                "row normalization: a warp a row (rows of {cols}: at most {ROW_ELEMENTS_PER_THREAD} elements a thread)"
            )
        } else {
            format!(
                "row normalization: {w} warps a row of {cols} (the fewest, up to {XLA_MAX_WARPS}, that leave at most {ROW_ELEMENTS_PER_THREAD} elements a thread), their values meeting in shared memory"
            )
        },
    }
}

/// The most rows a thread takes in Triton's layout (the dumps' norms take 2 and 4): each
/// pass unrolls a loop over them and keeps a register of each reduction for each; a tile
/// of more rows a thread is split among the warps instead.
pub const MAX_ROWS_PER_THREAD: i64 = 8;

/// Triton's blocked layout (`triton::gpu::BlockedEncodingAttr`, as its `getDefaultBlocked`
/// builds it for a 2-D tile in row-major order) of a tile of `tile_rows` rows of `cols` on
/// `warps` warps, `vector` elements a thread in one access (`sizePerThread`): the warp's
/// 32 threads along the row first, then the warps along the row while the row has room
/// for them, the rest of the warps on other rows; each thread then repeats its columns
/// over the tile's rows. `(warps along the row, rows a thread)`, for the layouts the row
/// kernel writes: a row of whole warps of `vector`-element accesses (the threads of a warp
/// all on one row), the warps along the row dividing `warps` and the tile's rows a whole
/// number of the block's row groups. `None` otherwise (a row shorter than a warp's
/// accesses, a tile whose rows the block's groups do not divide).
pub fn triton_row_layout(cols: i64, tile_rows: i64, warps: i64, vector: i64) -> Option<(i64, i64)> {
    let v = vector.max(1);
    if cols % (v * WARP) != 0 || warps < 1 || tile_rows < 1 {
        return None;
    }
    let room = cols / (v * WARP);
    let mut along = 1;
    while along * 2 <= warps.min(room) && warps % (along * 2) == 0 && room % (along * 2) == 0 {
        along *= 2;
    }
    let groups = warps / along;
    (tile_rows % groups == 0).then_some((along, tile_rows / groups))
}

/// The elements of 16 bytes of the narrowest type a fusion reads or writes (Triton's
/// `sizePerThread` for a row-major tile).
fn narrowest_vector(spec: &KernelSpec) -> i64 {
    let narrowest = spec
        .inputs
        .iter()
        .map(|t| t.elem.bytes())
        .chain([spec.output.elem.bytes()])
        .min()
        .unwrap_or(4)
        .max(1);
    (16 / narrowest).max(1)
}

/// How a row normalization of rows of `cols` elements splits them: [`hero_split`] where
/// each output element is a row (and no XLA tiling says otherwise), else [`row_split`].
pub fn split_of(spec: &KernelSpec, cols: i64) -> RowSplit {
    if cols == 1 && spec.xla_tile.is_none() {
        hero_split(spec)
    } else {
        row_split(spec, cols)
    }
}

/// The split of a row normalization whose rows are single output elements (a reduction
/// under an elementwise epilogue, `abs(reduce(exp(x - m)))`: [`super::rows::rows_of`]'s
/// element rows): XLA runs such a fusion with its reduction emitter, the reduction the hero
/// and the epilogue applied to its result, so the launch is its row reduction's: XLA's
/// threads along the reduced elements ([`xla_row_threads`], `num_threads_x`) and blocks of
/// [`XLA_ROW_REDUCTION_BLOCK`] threads (more for a row that takes more, fewer for fewer
/// rows). The H100 dump's
/// logsumexp epilogue, rows of 1000: 64 threads a row, 4 rows a block, grid 2048, as
/// ncu saw XLA launch it (`xla-kernel-times-ncu.csv`), where a warp a row on blocks of 4
/// warps had read each row with half the threads.
pub fn hero_split(spec: &KernelSpec) -> RowSplit {
    let n = super::rows::shortest_reduction(spec);
    let threads = if n == i64::MAX {
        WARP
    } else {
        xla_row_threads(n).max(WARP)
    };
    let warps = threads / WARP;
    // (as `row_reduction_default`: fewer threads a block for fewer rows)
    let rows = spec.output.num_elements().unwrap_or(1).max(1);
    let block = XLA_ROW_REDUCTION_BLOCK
        .min(rows.saturating_mul(threads))
        .max(threads);
    RowSplit {
        warps_per_row: warps,
        rows_per_thread: 1,
        block: Some(block),
        rule: format!(
            "row normalization: each output element a row, its reduction of {n} elements under an elementwise epilogue: XLA's reduction emitter launch, {threads} threads along it (num_threads_x: 16 elements a thread, whole warps), blocks of {block}"
        ),
    }
}

/// [`Strategy::RowNormalization`]'s launch: the row's warps as [`row_split`] gives them
/// ([`row_normalization_launch_with`]). `None` when the grid would exceed `max_blocks`
/// (the plain loop caps its grid with chunks instead).
pub fn row_normalization_launch(
    spec: &KernelSpec,
    cfg: LaunchConfig,
) -> Result<Option<Launch>, MapError> {
    let Some(lm) = super::rows::rows_of(spec)? else {
        return Ok(None);
    };
    let cols = lm.dims[1].bounds.hi + 1;
    let split = split_of(spec, cols);
    // Rows a thread only on the block the layout was made for (XLA's).
    let per_thread = if split.block == Some(cfg.block) {
        split.rows_per_thread
    } else {
        1
    };
    row_normalization_launch_rows(spec, cfg, split.warps_per_row, per_thread)
}

/// [`Strategy::RowNormalization`]'s launch with `warps_per_row` warps a row of the output
/// (the rows are its elements but the minor physical dimension, in physical order), or
/// `row_threads` lanes when a row is shorter than a warp and divides it (several rows per
/// warp); `block` rounded down to whole warps, which wins over `warps_per_row`: the row
/// gets the most warps up to it that divide the block's. Lane `th_x mod row_threads`
/// handles the row's elements `lane + col * row_threads`. `None` when the grid would
/// exceed `max_blocks`.
pub fn row_normalization_launch_with(
    spec: &KernelSpec,
    cfg: LaunchConfig,
    warps_per_row: i64,
) -> Result<Option<Launch>, MapError> {
    row_normalization_launch_rows(spec, cfg, warps_per_row, 1)
}

/// [`row_normalization_launch_with`], each thread taking `rows_per_thread` rows
/// ([`Launch::rows_per_thread`]); one where the rows are shorter than a warp (several rows
/// a warp already).
pub fn row_normalization_launch_rows(
    spec: &KernelSpec,
    cfg: LaunchConfig,
    warps_per_row: i64,
    rows_per_thread: i64,
) -> Result<Option<Launch>, MapError> {
    check_config(&cfg)?;
    let Some(lm) = super::rows::rows_of(spec)? else {
        return Ok(None);
    };
    let cols = lm.dims[1].bounds.hi + 1;
    let rows = lm.dims[0].bounds.hi + 1;
    if cols <= 0 || rows <= 0 || spec.output.num_elements()? == 0 {
        return Ok(None);
    }
    let warps = (cfg.block / WARP).max(1);
    let block = warps * WARP;
    let row_threads = if cols > 1 && cols < WARP && WARP % cols == 0 {
        cols
    } else {
        let mut w = warps_per_row.clamp(1, warps);
        while warps % w != 0 {
            w -= 1;
        }
        WARP * w
    };
    let groups = block / row_threads;
    let per_thread = if row_threads < WARP {
        1
    } else {
        rows_per_thread.clamp(1, rows.max(1))
    };
    let rows_per_block = groups
        .checked_mul(per_thread)
        .ok_or_else(|| MapError::Overflow("the rows of a block".into()))?;
    let grid = ceil_div(rows, rows_per_block);
    if grid > cfg.max_blocks {
        return Ok(None);
    }
    // `vector` consecutive elements a lane (`unroll_id`): lane `l` takes vectors l,
    // l + row_threads, .. of the row.
    let vector = cfg.vector;
    if cols % vector != 0 {
        return Err(MapError::Other(format!(
            "{}: vector={vector} does not divide its rows of {cols} elements",
            spec.name
        )));
    }
    let dims = thread_dims([block, 1, 1], [grid, 1, 1]);
    let nd = dims.len() as u32;
    // With several rows a thread, `i` (the first range) is the thread's row.
    let first = if per_thread > 1 { nd + 1 } else { nd };
    let mut row = bl_x()
        .mul(c(rows_per_block))
        .add(th_x().floordiv(c(row_threads)));
    if per_thread > 1 {
        row = row.add(Expr::var(nd).mul(c(groups)));
    }
    let lane_vec = th_x()
        .modulo(c(row_threads))
        .add(Expr::var(first).mul(c(row_threads)));
    let col = if vector > 1 {
        lane_vec.mul(c(vector)).add(Expr::var(first + 1))
    } else {
        lane_vec
    };
    let mut ranges = Vec::new();
    if per_thread > 1 {
        ranges.push(Variable::new("i", 0, per_thread - 1));
    }
    ranges.push(Variable::new(
        "col",
        0,
        ceil_div(cols / vector, row_threads) - 1,
    ));
    if vector > 1 {
        ranges.push(Variable::new("unroll_id", 0, vector - 1));
    }
    // The rows' map with the thread's row and column in place of `r` and `c`.
    let results = lm
        .results
        .iter()
        .map(|e| e.substitute(&mut |v| if v == 0 { row } else { col }))
        .collect();
    let constraints = vec![
        (row, Interval::new(0, rows - 1)),
        (lane_vec, Interval::new(0, cols / vector - 1)),
    ];
    let map = finish(IndexingMap::new(dims, ranges, vec![], results, constraints));
    Ok(Some(Launch {
        strategy: Strategy::RowNormalization,
        config: LaunchConfig {
            block,
            vector,
            unroll: 1,
            ..cfg
        },
        block: [block, 1, 1],
        grid: [grid, 1, 1],
        write_map: map.clone(),
        read_map: map,
        read_from: 0,
        row_threads,
        rows_per_thread: per_thread,
        parts: vec![],
    }))
}

/// What XLA's launch rules read of the device: its SM count and resident threads per SM.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    pub sms: i64,
    pub threads_per_sm: i64,
}

impl DeviceLimits {
    /// An H100 SXM (132 SMs of 2048 resident threads): the device of issue 28's figures,
    /// assumed where no device is asked (`emit`, `threads` on a machine without one).
    pub const H100: DeviceLimits = DeviceLimits {
        sms: 132,
        threads_per_sm: 2048,
    };

    /// Threads the whole device holds at once (XLA's `threads_per_core_limit *
    /// core_count`).
    pub fn resident_threads(&self) -> i64 {
        self.sms.saturating_mul(self.threads_per_sm)
    }
}

/// XLA's default launch for a fusion: the configuration, and the rules that gave it, one
/// line each (shown by `threads`, `emit` and `bench`).
#[derive(Clone, Debug, PartialEq)]
pub struct XlaDefault {
    pub config: LaunchConfig,
    pub rules: Vec<String>,
}

/// XLA's `MaxUnrollFactor()` (xla/service/gpu/gpu_fusible.h): loops unroll by at most 4.
pub const XLA_MAX_UNROLL: i64 = 4;

/// XLA's threads per block for loops: a warp per warp scheduler, `threads_per_warp *
/// kWarpSchedulers` = 32 × 4 (`CalculateLaunchDimensions`, launch_dimensions.cc).
pub const XLA_LOOP_BLOCK: i64 = 128;

/// XLA's target block for row reductions, `kThreadsPerBlockTarget` = 256 (the reduction
/// emitter: "the general recommendation is to use between 128 and 512 threads").
pub const XLA_ROW_REDUCTION_BLOCK: i64 = 256;

/// The bytes of the widest access a thread makes at once: 128 bits (`ld.global.v4.f32`).
pub const VECTOR_BYTES: i64 = 16;

/// XLA's `ComputeMaxUnrollFactor` (gpu_fusible.cc): the largest power of two up to
/// [`XLA_MAX_UNROLL`] that divides the element count, else 1.
pub fn xla_max_unroll(num_elements: i64) -> i64 {
    let mut i = XLA_MAX_UNROLL;
    while i > 1 {
        if num_elements % i == 0 {
            return i;
        }
        i /= 2;
    }
    1
}

/// XLA's `MayPreventVectorization` (gpu_fusible.cc) as far as a kernel spec shows it: a
/// variadic `reduce` (a tuple of reduced values), an op ixmap has no emitter for (a dot, a
/// sort), or a concatenate of more than 10 operands (`kMaxConcatArgumentsForUnrolling`,
/// "unrolling concat with a large amount of arguments causes excessive register
/// spilling"). That is the list of the XLA the shared H100 dumps come from (JAX 0.11.2):
/// older XLA also kept `reduce-window` (and sin, cos, tan, power, atan2) from unrolling,
/// but that XLA launched pool_grad's variadic `reduce-window` of 524288 elements on
/// blocks of 128 and a grid of 1024 (ncu, `xla-kernel-times-ncu.csv`): 4 elements a
/// thread, unrolled. A variadic `reduce-window` therefore unrolls here too.
pub fn may_prevent_vectorization(spec: &KernelSpec) -> bool {
    fn walk(b: &Body, depth: usize) -> bool {
        if depth > 4096 {
            return true;
        }
        match b {
            Body::ReduceTuple { window: false, .. } | Body::Opaque { .. } => true,
            Body::Unary(_, a) | Body::Convert(_, a) => walk(a, depth + 1),
            Body::Binary(_, a, c) | Body::Compare(_, a, c) => {
                walk(a, depth + 1) || walk(c, depth + 1)
            }
            Body::Select(p, a, c) => walk(p, depth + 1) || walk(a, depth + 1) || walk(c, depth + 1),
            _ => false,
        }
    }
    let many_parts = matches!(&spec.root, Root::Concatenate { parts, .. } if parts.len() > 10);
    many_parts || spec.functions.iter().any(|f| walk(&f.body, 0))
}

/// `e` as `rest + k * v` with `rest` free of variable `v`, reading the top-level sum; `None`
/// when `v` appears elsewhere (inside a division, a product of variables, ...).
pub fn split_on(e: Expr, v: u32) -> Option<(Expr, i64)> {
    use crate::expr::{ExprKind, Op};
    match e.kind() {
        _ if !e.uses_var(v) => Some((e, 0)),
        ExprKind::Var(x) if x == v => Some((Expr::constant(0), 1)),
        ExprKind::Bin(Op::Add, a, b) => {
            let (ra, ka) = split_on(a, v)?;
            let (rb, kb) = split_on(b, v)?;
            Some((ra.add(rb), ka.checked_add(kb)?))
        }
        ExprKind::Bin(Op::Mul, a, b) => match (a.kind(), b.as_const()) {
            (ExprKind::Var(x), Some(k)) if x == v => Some((Expr::constant(0), k)),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `e` is a multiple of `n` for every value of its variables.
pub fn multiple_of(e: Expr, n: i64) -> bool {
    use crate::expr::{ExprKind, Op};
    match e.kind() {
        ExprKind::Const(c) => c % n == 0,
        ExprKind::Bin(Op::Add, a, b) => multiple_of(a, n) && multiple_of(b, n),
        ExprKind::Bin(Op::Mul, a, b) => multiple_of(a, n) || multiple_of(b, n),
        _ => false,
    }
}

/// Whether a loop launch's thread reads the `vector` elements of `unroll_id` through
/// `access` (output index → input index) from one aligned run of the input (strides
/// `strides`): the simplified linear offset is `base + unroll_id`, `base` a multiple of
/// `vector` and free of `unroll_id`, and no constraint depends on `unroll_id` (the test the
/// CUDA emitter makes before it writes one 128-bit load); or the offset does not depend on
/// `unroll_id` at all (one element for the whole vector).
pub fn reads_one_vector(
    launch: &Launch,
    access: &IndexingMap,
    strides: &[i64],
    vector: i64,
) -> Result<bool, MapError> {
    let m = compose(&launch.write_map, access)?;
    let lin = Expr::linear_combination(&m.results, strides);
    let s = finish(IndexingMap::new(
        m.dims.clone(),
        m.ranges.clone(),
        m.runtimes.clone(),
        vec![lin],
        m.constraints.clone(),
    ));
    if s.status != crate::map::Status::Defined || s.results.len() != 1 {
        return Ok(false);
    }
    let Some(pos) = s.ranges.iter().position(|v| v.name == "unroll_id") else {
        // Simplified away: the offset does not depend on it (one element for the vector).
        return Ok(true);
    };
    let u = (s.dims.len() + pos) as u32;
    let constrained = s.constraints.iter().any(|(e, _)| e.uses_var(u));
    Ok(match split_on(s.results[0], u) {
        Some((rest, 1)) => !constrained && multiple_of(rest, vector),
        // The same element for the whole vector (a broadcast along the minor dimension):
        // one load serves it, nothing narrows the others' accesses.
        Some((_, 0)) => true,
        _ => false,
    })
}

/// XLA's launch for `spec` (`tiled` as the user forces it), and the rules that chose it.
///
/// - **Loops** (`ComputeLoopFusionConfig`, gpu_fusible.cc): unroll by
///   [`xla_max_unroll`] of the element count, but only when the output has at least as
///   many elements as the device has resident threads ("for fusions with small outputs
///   prefer to use one thread per output element") and nothing in the fusion may prevent
///   vectorization ([`may_prevent_vectorization`]). XLA's unrolled elements are
///   consecutive in the output's physical order, ixmap's `vector`: ixmap keeps them within
///   a row of the minor dimension, so the factor is halved until it divides it. Where every
///   tensor's element is narrower than 4 bytes and every operand reads its vector in one
///   aligned run or one element ([`reads_one_vector`]), the vector is widened to 128 bits (ixmap's rule:
///   XLA stops at 4 elements, a 64-bit access for f16). Threads per block
///   [`XLA_LOOP_BLOCK`], fewer when there are fewer vectors (`CalculateLaunchDimensions`);
///   the grid is not capped below the hardware's limit (XLA splits a grid over 2^31 - 1
///   blocks into `y`; ixmap loops over `chunk_id`).
/// - **Row reductions** (`GetVectorSizeForMlir`, reduction_base.cc): a row of odd length,
///   or one that would leave threads without work, is read one element at a time; with
///   inputs of 32 bits or more, 2 at a time; narrower, 4 when the row holds 4 per thread,
///   else 2 — where the threads per row are XLA's (the row's length when it divides a
///   warp, else `min(1024, round_up(ceil(row / 16), 32))`). Blocks of
///   [`XLA_ROW_REDUCTION_BLOCK`] threads (fewer when there are fewer rows); ixmap gives
///   each row a warp (or fewer lanes for short rows, as XLA's `RowReductionGetRowsPerWarp`).
/// - **Transposes**: XLA's 32×32 tile on blocks of 128 threads (4 rows of 32, 8 tile rows
///   each; the transpose emitter's `kNumRows = 4`, `kBaseBlockSize = WarpSize()`), as
///   [`transpose_launch`] always builds it (XLA vectorizes the tile for elements under 4
///   bytes; ixmap's tile moves one element per thread and row).
/// - **Column reductions**: XLA's 32×32 tile of 1024 threads, as [`reduction_launch`],
///   each thread reading `vector` adjacent columns: XLA's `GetVectorSizeForMlir` on the
///   minor kept dimension with 32 threads along it ([`column_reduction_default`]).
/// - **Row normalizations** (softmax, layer and RMS norms): XLA runs them as Triton kernels
///   that keep a row in registers; ixmap takes the warps a row and the block from the
///   fusion's `backend_config` (XLA's `num_warps` and output tile) where it prints them,
///   else a warp a row up to 1024 elements and more for longer rows, 4 warps a block
///   ([`row_split`]); fewer lanes for rows shorter than a warp.
pub fn xla_default(
    spec: &KernelSpec,
    tiled: Option<bool>,
    dev: DeviceLimits,
) -> Result<XlaDefault, MapError> {
    let base = LaunchConfig::default();
    let probe = choose(spec, base, tiled)?;
    let mut rules = Vec::new();
    let config = match probe.strategy {
        Strategy::Loop if spec.root == Root::Elementwise => {
            loop_default(spec, &probe, dev, &mut rules)?
        }
        Strategy::RowReduction => row_reduction_default(spec, &probe, &mut rules)?,
        Strategy::TiledTranspose { .. } => {
            rules.push(
                "tiled transpose: XLA's 32x32 tile on blocks of 128 threads (4 rows of 32, 8 tile rows each)"
                    .into(),
            );
            base
        }
        Strategy::ColumnReduction => {
            rules
                .push("column reduction: XLA's 32x32 tile of columns, 1024 threads a block".into());
            column_reduction_default(spec, &mut rules)?
        }
        Strategy::RowNormalization => {
            // The warps a row, and the block: XLA's from the fusion's backend_config
            // (a Triton fusion's num_warps and output tile), else ixmap's rule
            // (`row_split`), on blocks of 4 warps (more for a row that takes more).
            let cols = super::rows::rows_of(spec)?.map_or(1, |lm| lm.dims[1].bounds.hi + 1);
            let split = split_of(spec, cols);
            let block = split
                .block
                .unwrap_or_else(|| base.block.max(split.warps_per_row.saturating_mul(WARP)));
            let probe = row_normalization_launch_rows(
                spec,
                LaunchConfig { block, ..base },
                split.warps_per_row,
                split.rows_per_thread,
            )?
            .unwrap_or(probe);
            rules.push(split.rule);
            let rt = probe.row_threads;
            let block_rows = probe.block[0] / rt.max(1) * probe.rows_per_thread;
            rules.push(format!(
                "row normalization: blocks of {} threads, {} a row, {} row{} a block{}{}",
                probe.block[0],
                if rt < WARP {
                    format!("{rt} lanes")
                } else if rt == WARP {
                    "a warp".into()
                } else {
                    format!("{} warps", rt / WARP)
                },
                block_rows,
                if block_rows == 1 { "" } else { "s" },
                if probe.rows_per_thread > 1 {
                    format!(", {} a thread", probe.rows_per_thread)
                } else {
                    String::new()
                },
                if split.block.is_some() {
                    " (XLA's)"
                } else {
                    " (XLA runs softmax as a Triton kernel; ixmap's blocks of 4 warps)"
                }
            ));
            let vector = row_normalization_vector(spec, &probe)?;
            if vector > 1 {
                rules.push(format!(
                    "row normalization: {vector} consecutive elements a lane, 16 bytes of the narrowest type in one access (Triton's sizePerThread)"
                ));
            }
            LaunchConfig {
                block: probe.block[0],
                vector,
                ..base
            }
        }
        Strategy::Loop
        | Strategy::Concatenate
        | Strategy::DynamicUpdateSlice
        | Strategy::Scatter => {
            rules.push(format!(
                "{}: one element per thread, blocks of {XLA_LOOP_BLOCK}",
                probe.strategy.name()
            ));
            base
        }
    };
    Ok(XlaDefault { config, rules })
}

/// The elements a lane of a row normalization takes at a time: 16 bytes of the narrowest
/// type the fusion reads or writes (as Triton's blocked layouts give each thread), halved
/// until it divides the row and the row's lanes all have a vector; 1 for rows shorter than
/// that or bodies with conditional reads (a pad's guard, a dynamic slice).
fn row_normalization_vector(spec: &KernelSpec, probe: &Launch) -> Result<i64, MapError> {
    let Some(lm) = super::rows::rows_of(spec)? else {
        return Ok(1);
    };
    let cols = lm.dims[1].bounds.hi + 1;
    if spec.functions.iter().any(|f| f.body.has_conditional()) {
        return Ok(1);
    }
    let mut v = narrowest_vector(spec);
    while v > 1 && (cols % v != 0 || cols < v * probe.row_threads) {
        v /= 2;
    }
    Ok(v.max(1))
}

fn loop_default(
    spec: &KernelSpec,
    probe: &Launch,
    dev: DeviceLimits,
    rules: &mut Vec<String>,
) -> Result<LaunchConfig, MapError> {
    let out = &spec.output;
    let n = out.num_elements()?;
    let resident = dev.resident_threads();
    let mut v = 1;
    if n < resident {
        rules.push(format!(
            "loop: {n} elements, fewer than the {resident} threads the device holds ({} SMs x {}): one element per thread (XLA)",
            dev.sms, dev.threads_per_sm
        ));
    } else if may_prevent_vectorization(spec) {
        rules.push("loop: an op that may prevent vectorization (a variadic reduce, an op without an emitter, a concatenate of over 10 operands): not unrolled (XLA)".into());
    } else {
        v = xla_max_unroll(n);
        rules.push(format!(
            "loop: unroll {v}, the largest of 4, 2 that divides {n} elements (XLA's ComputeMaxUnrollFactor)"
        ));
    }
    let minor = out.minor_dim().map_or(1, |d| out.dims[d]);
    if minor % v != 0 {
        while v > 1 && minor % v != 0 {
            v /= 2;
        }
        rules.push(format!(
            "loop: vector {v}, the unrolled elements kept within a row of the minor dimension ({minor})"
        ));
    }
    let widest = spec
        .inputs
        .iter()
        .chain(std::iter::once(out))
        .map(|t| t.elem.bytes())
        .max()
        .unwrap_or(4);
    let wide = VECTOR_BYTES / widest.max(1);
    if v == XLA_MAX_UNROLL && wide > v && minor % wide == 0 {
        let cfg = LaunchConfig {
            vector: wide,
            ..LaunchConfig::default()
        };
        let l = loop_launch(out, cfg)?;
        let mut all = true;
        for acc in accesses(spec, &l)? {
            let strides = spec.inputs[acc.input].strides()?;
            if !reads_one_vector(&l, &acc.map, &strides, wide)? {
                all = false;
                break;
            }
        }
        if all {
            v = wide;
            rules.push(format!(
                "loop: vector {v}, 128-bit accesses: every operand reads its {v} elements in one aligned run"
            ));
        }
    }
    let threads = ceil_div(n / v, 1);
    rules.push(format!(
        "loop: blocks of {} threads (XLA: 32 x 4 warp schedulers, fewer for fewer vectors), grid uncapped",
        XLA_LOOP_BLOCK.min(threads)
    ));
    let _ = probe;
    Ok(LaunchConfig {
        block: XLA_LOOP_BLOCK,
        vector: v,
        unroll: 1,
        max_blocks: MAX_GRID,
    })
}

/// XLA's threads along a row of `row` elements (the row reduction emitter's
/// `num_threads_x`: 16 elements a thread, rounded up to whole warps, at most 1024; a row
/// shorter than a warp that divides it, that many).
fn xla_row_threads(row: i64) -> i64 {
    if row < WARP && WARP % row == 0 {
        row
    } else {
        ceil_div(ceil_div(row, 16), WARP)
            .saturating_mul(WARP)
            .min(1024)
    }
}

/// The threads along a long row of `n_red` elements read `vector` at a time when it takes
/// several warps: XLA's ([`xla_row_threads`]) where each has a vector to read; `None` for a
/// warp (or fewer), and for the kernels whose trees are a warp's (a multi-output reduction,
/// and the row kernel's reduction with reductions of its row nested in its operand).
fn long_row_threads(spec: &KernelSpec, n_red: i64, vector: i64) -> Result<Option<i64>, MapError> {
    let t = xla_row_threads(n_red);
    Ok((t > WARP
        && n_red / vector.max(1) >= t
        && spec.more_outputs.is_empty()
        && !(vector == 1 && super::rows::nested_root(spec)?))
    .then_some(t))
}

fn row_reduction_default(
    spec: &KernelSpec,
    probe: &Launch,
    rules: &mut Vec<String>,
) -> Result<LaunchConfig, MapError> {
    let (rmap, _) = spec
        .root_reduction()
        .ok_or_else(|| MapError::Other(format!("{} is not a reduction", spec.name)))?;
    let row = rmap
        .ranges
        .iter()
        .map(|v| v.bounds.hi - v.bounds.lo + 1)
        .try_fold(1i64, |a, b| a.checked_mul(b))
        .ok_or_else(|| overflow("the reduction"))?;
    let smallest_bits = spec
        .inputs
        .iter()
        .map(|t| t.elem.bytes() * 8)
        .min()
        .unwrap_or(32);
    let xla_threads = xla_row_threads(row);
    let v = xla_row_vector(row, xla_threads, smallest_bits);
    rules.push(format!(
        "row reduction: vector {v} (XLA's GetVectorSizeForMlir: row {row}, {xla_threads} threads along it, smallest input {smallest_bits} bits)"
    ));
    let per_row = row / v;
    let rows = spec.output.num_elements()?;
    // As `reduction_launch` takes them: XLA's threads along a long row (the block a whole
    // number of rows, so that it takes them), else a warp (or the lanes a short row needs).
    let (block, along) = if per_row < WARP && WARP % per_row == 0 {
        let warps_needed = ceil_div(rows, WARP / per_row);
        (
            XLA_ROW_REDUCTION_BLOCK.min(warps_needed.saturating_mul(WARP)),
            per_row,
        )
    } else if let Some(t) = long_row_threads(spec, row, v)? {
        let rows_per_block = (XLA_ROW_REDUCTION_BLOCK / t).clamp(1, rows.max(1));
        (t * rows_per_block, t)
    } else {
        (XLA_ROW_REDUCTION_BLOCK.min(rows.saturating_mul(WARP)), WARP)
    };
    let block = block.max(WARP);
    rules.push(format!(
        "row reduction: blocks of {block} threads, {along} along a row, {} row{} a block (XLA's kThreadsPerBlockTarget = {XLA_ROW_REDUCTION_BLOCK} and num_threads_x, fewer for fewer rows)",
        block / along.max(1),
        if block / along.max(1) == 1 { "" } else { "s" }
    ));
    let _ = probe;
    Ok(LaunchConfig {
        block,
        vector: v,
        unroll: 1,
        max_blocks: MAX_GRID,
    })
}

/// XLA's vector for a column reduction (`ColumnReductionFusion`: `GetVectorSizeForMlir`
/// on the minor kept dimension, 32 threads along it): each thread reads that many adjacent
/// columns. The minor kept dimension is XLA's: the kept dimensions after the last reduced
/// one, collapsed into one.
fn column_reduction_default(
    spec: &KernelSpec,
    rules: &mut Vec<String>,
) -> Result<LaunchConfig, MapError> {
    let (rmap, _) = spec
        .root_reduction()
        .ok_or_else(|| MapError::Other(format!("{} is not a reduction", spec.name)))?;
    let nd = rmap.dims.len() as u32;
    let mut minor = 1i64;
    for &e in rmap.results.iter().rev() {
        match e.as_var() {
            Some(v) if v < nd => {
                minor = minor
                    .checked_mul(rmap.dims[v as usize].bounds.hi + 1)
                    .ok_or_else(|| overflow("the reduction"))?
            }
            _ => break,
        }
    }
    let smallest_bits = spec
        .inputs
        .iter()
        .map(|t| t.elem.bytes() * 8)
        .min()
        .unwrap_or(32);
    let v = xla_row_vector(minor, WARP, smallest_bits);
    rules.push(format!(
        "column reduction: vector {v}, adjacent columns per thread (XLA's GetVectorSizeForMlir: minor kept dimension {minor}, 32 threads along it, smallest input {smallest_bits} bits)"
    ));
    Ok(LaunchConfig {
        vector: v,
        ..LaunchConfig::default()
    })
}

/// XLA's `GetVectorSizeForMlir` (xla/service/gpu/fusions/reduction_base.cc) for a row of
/// `row` elements read by `threads` threads, the smallest input `smallest_bits` wide.
pub fn xla_row_vector(row: i64, threads: i64, smallest_bits: i64) -> i64 {
    // "If the minor dimension is not divisible by 2, we can't currently vectorize."
    if row % 2 != 0 {
        return 1;
    }
    // "Only enable vectorization if all threads will still have work."
    if threads.saturating_mul(2) > row {
        return 1;
    }
    // "16 byte vector loads are often slower than 8 byte loads."
    if smallest_bits >= 32 {
        return 2;
    }
    if threads.saturating_mul(4) > row {
        return 2;
    }
    if row % 4 == 0 {
        4
    } else {
        2
    }
}

/// [`choose`] with XLA's default configuration ([`xla_default`]) for what `given` leaves
/// unset: the launch `threads`, `emit` and `bench` run when no option says otherwise.
pub fn choose_default(
    spec: &KernelSpec,
    tiled: Option<bool>,
    dev: DeviceLimits,
) -> Result<(Launch, XlaDefault), MapError> {
    let d = xla_default(spec, tiled, dev)?;
    Ok((choose(spec, d.config, tiled)?, d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::spec::ElemType;
    use crate::map::DomainPoints;

    #[test]
    fn seed_001_elementwise_thread_map() {
        let out = Tensor::row_major("out", ElemType::F32, &[20, 40, 300]);
        let l = loop_launch(
            &out,
            LaunchConfig {
                block: 128,
                vector: 4,
                unroll: 1,
                ..Default::default()
            },
        )
        .expect("launch");
        assert_eq!(
            l.write_map.to_string(),
            "(th_x, th_y, th_z, bl_x, bl_y, bl_z)[unroll_id] -> ((bl_x * 128 + th_x) floordiv 3000, \
             ((bl_x * 128 + th_x) floordiv 75) mod 40, ((bl_x * 128 + th_x) mod 75) * 4 + unroll_id), \
             domain: th_x in [0, 127], th_y in [0, 0], th_z in [0, 0], bl_x in [0, 468], bl_y in [0, 0], \
             bl_z in [0, 0], unroll_id in [0, 3], bl_x * 128 + th_x in [0, 59999], is_simplified: true"
        );
    }

    /// Every output element is written exactly once by a loop launch.
    #[test]
    fn loop_launch_covers_the_output_once() {
        for (dims, cfg) in [
            (
                vec![5, 7, 6],
                LaunchConfig {
                    block: 32,
                    vector: 2,
                    unroll: 1,
                    ..Default::default()
                },
            ),
            (
                vec![3, 10],
                LaunchConfig {
                    block: 8,
                    vector: 1,
                    unroll: 3,
                    ..Default::default()
                },
            ),
            (
                vec![64],
                LaunchConfig {
                    block: 16,
                    vector: 4,
                    unroll: 2,
                    ..Default::default()
                },
            ),
            // A capped grid: 105 vectors over 3 blocks of 8 threads, 5 chunks each.
            (
                vec![5, 7, 6],
                LaunchConfig {
                    block: 8,
                    vector: 2,
                    unroll: 1,
                    max_blocks: 3,
                },
            ),
            (
                vec![1000],
                LaunchConfig {
                    block: 32,
                    vector: 1,
                    unroll: 2,
                    max_blocks: 4,
                },
            ),
        ] {
            let out = Tensor::row_major("o", ElemType::F32, &dims);
            let l = loop_launch(&out, cfg).expect("launch");
            let n = out.num_elements().expect("small") as usize;
            let mut seen = vec![0u32; n];
            let strides = out.strides().expect("small");
            DomainPoints::for_each(&l.write_map, &Default::default(), &mut |_, r| {
                let off: i64 = r.iter().zip(&strides).map(|(a, b)| a * b).sum();
                seen[off as usize] += 1;
                Ok(true)
            })
            .expect("enumerate");
            assert!(seen.iter().all(|&k| k == 1), "{dims:?} {cfg:?}: {seen:?}");
        }
    }

    /// The tiled transpose writes every output element once, and reads (in output
    /// coordinates) every element once.
    #[test]
    fn transpose_tiles_cover_the_output_once() {
        let out = Tensor::row_major("o", ElemType::F32, &[3, 40, 70]);
        let l = transpose_launch(&out, 1, 2).expect("launch");
        for m in [&l.write_map, &l.read_map] {
            let mut seen = vec![0u32; 3 * 40 * 70];
            DomainPoints::for_each(m, &Default::default(), &mut |_, r| {
                seen[(r[0] * 2800 + r[1] * 70 + r[2]) as usize] += 1;
                Ok(true)
            })
            .expect("enumerate");
            assert!(seen.iter().all(|&k| k == 1));
        }
    }
}
