//! A *mapping*: how a fusion's elements are laid onto hardware, as one value the commands
//! share. `threads`, `coalescing`, `emit` and `bench` read it (`mapping=NAME`), `tune`
//! produces it (bound to `FUSION_best`), and `mapping ...` writes one by hand.
//!
//! Two halves, each used where it applies:
//! - the GPU launch: threads per block, elements per vector, vectors per thread, and
//!   whether a transpose goes through a shared-memory tile;
//! - the CPU loop nest: tile sizes of the output (the loops run over tiles, then over the
//!   elements of a tile, as `tile` and `tune` derive them), or none for the plain loop.
//!
//! A *layout* is a mapping too ([`layout_launch`]): a CuTe thread/value layout, a Triton
//! linear layout or a TTGIR attribute bound by `layout` and given as `mapping=NAME` says
//! which thread of a block, in which value (register), computes which element of a tile;
//! the launch repeats the tile over the output, a block per tile, masked where the tile
//! does not divide it. The launch is a loop launch like any other, so `threads`,
//! `coalescing`, `emit`, `check` and `bench` take it as they are.

use super::emit::{self, Emitted};
use super::launch::{Launch, LaunchConfig, Strategy, MAX_GRID};
use super::spec::{KernelSpec, Root};
use crate::expr::Expr;
use crate::interval::Interval;
use crate::layout::launch::{tile_text, BlockLayout};
use crate::map::{IndexingMap, Variable};
use crate::MapError;

#[derive(Clone, Debug, PartialEq, Default)]
pub struct Mapping {
    /// The fusion it was chosen for (`tune` sets it); `None` for one written by hand.
    pub fusion: Option<String>,
    pub config: LaunchConfig,
    /// Tile transposes through shared memory (`None`: when the launch finds it pays).
    pub tiled: Option<bool>,
    /// Tile sizes of the output for the CPU loop nest (`None`: the untiled loop).
    pub tile: Option<Vec<i64>>,
    /// Where it came from, e.g. `tune t on cpu: 5.76x the default`.
    pub origin: Option<String>,
}

impl Mapping {
    /// `block=128 vector=4 unroll=1 tiled=auto tile=(32, 64)`: the arguments that give it.
    pub fn args(&self) -> String {
        let mut s = format!(
            "block={} vector={} unroll={}",
            self.config.block, self.config.vector, self.config.unroll
        );
        if self.config.max_blocks != super::launch::MAX_GRID {
            s += &format!(" max_blocks={}", self.config.max_blocks);
        }
        if let Some(t) = self.tiled {
            s += &format!(" tiled={t}");
        }
        if let Some(t) = &self.tile {
            s += &format!(" tile=({})", join(t));
        }
        s
    }

    /// The CPU half in words.
    pub fn cpu_text(&self) -> String {
        match &self.tile {
            Some(t) => format!("tiles of ({}), then the elements of a tile", join(t)),
            None => "the untiled loop over the output".into(),
        }
    }

    /// The GPU half in words.
    pub fn gpu_text(&self) -> String {
        let c = &self.config;
        let mut s = format!(
            "{} threads per block, {} element{} per vector, {} vector{} per thread",
            c.block,
            c.vector,
            if c.vector == 1 { "" } else { "s" },
            c.unroll,
            if c.unroll == 1 { "" } else { "s" }
        );
        if c.max_blocks != super::launch::MAX_GRID {
            s += &format!(
                ", at most {} block{} (more elements become more vectors per thread)",
                c.max_blocks,
                if c.max_blocks == 1 { "" } else { "s" }
            );
        }
        match self.tiled {
            Some(true) => s += ", transposes through a shared-memory tile",
            Some(false) => s += ", no shared-memory tile",
            None => {}
        }
        s
    }
}

/// A layout's launch of a fusion: the block's layout, the tiles over the output, and the
/// loop launch it makes (thread ids → output element, `chunk_id` and `unroll_id` the value).
#[derive(Clone, Debug)]
pub struct LayoutLaunch {
    /// The layout's name in the session.
    pub name: String,
    pub block: BlockLayout,
    /// Tiles along each output dimension (one count for a flat tile).
    pub tiles: Vec<i64>,
    /// Some tile sticks out of the output: its elements past the edge are masked.
    pub masked: bool,
    pub launch: Launch,
}

fn err(m: String) -> MapError {
    MapError::Other(m)
}

/// `a / b` rounded up (`a >= 0`, `b > 0`).
fn ceil_div(a: i64, b: i64) -> i64 {
    a / b + i64::from(a % b != 0)
}

/// The launch of `spec` by the layout `name`: thread `th_x` of block `bl_x` computes, for
/// each value `v = chunk_id · w + unroll_id`, the element `origin(bl_x) + L(th_x, v)`,
/// where `origin` walks the tiles in the output's physical order and `L` is the block's
/// layout (checked to cover its tile exactly once). A layout of one coordinate (an
/// offset) tiles the output in its physical order; otherwise it has one coordinate per
/// output dimension. `w` is the longest aligned run of consecutive elements each thread's
/// values take along the output's minor dimension (at most 16 bytes): one vector access.
pub fn layout_launch(
    spec: &KernelSpec,
    name: &str,
    block: BlockLayout,
) -> Result<LayoutLaunch, MapError> {
    match spec.root {
        Root::Elementwise => {}
        Root::Concatenate { .. } => {
            return Err(err(format!("{} is a concatenate, launched as one loop per operand: a layout launch computes each output element once from the fusion's body", spec.name)))
        }
        Root::DynamicUpdateSlice { .. } | Root::Scatter { .. } => {
            return Err(err(format!("{} updates its output in place (a loop over the update): a layout launch computes each output element once from the fusion's body", spec.name)))
        }
    }
    if let Some(o) = spec.more_outputs.iter().find(|o| o.is_side_of_reduction()) {
        return Err(err(format!(
            "{}: the further output {} is written where a reduction reads; a layout launch computes output elements only",
            spec.name, o.tensor.name
        )));
    }
    let out = &spec.output;
    let flat = block.tile.len() == 1;
    if !flat && block.tile.len() != out.rank() {
        return Err(err(format!(
            "layout `{name}` gives {} coordinates (a {}), but {} is {} ({} dimension{})",
            block.tile.len(),
            tile_text(&block.tile),
            out.name,
            out.shape_text(),
            out.rank(),
            if out.rank() == 1 { "" } else { "s" }
        )));
    }
    block
        .check_covers()
        .map_err(|e| err(format!("layout `{name}` {}", e.message)))?;
    let n = out.num_elements()?;
    if n == 0 {
        return Err(err(format!("{} has no elements", out.name)));
    }
    let phys = out.physical_dims();
    // The vector: values a thread spends on one aligned run along the minor dimension.
    let minor = if flat { Some(0) } else { out.minor_dim() };
    let widest = (16 / out.elem.bytes().max(1)).max(1);
    let w = minor.map_or(1, |m| block.vector_width(m, widest));
    let chunks = block.values / w;
    let threads = block.threads;
    // Tiles along each dimension (flat: one count), and the grid.
    let tiles: Vec<i64> = if flat {
        vec![ceil_div(n, block.tile[0])]
    } else {
        out.dims
            .iter()
            .zip(&block.tile)
            .map(|(&e, &t)| ceil_div(e, t))
            .collect()
    };
    let grid = tiles
        .iter()
        .try_fold(1i64, |a, &b| a.checked_mul(b))
        .filter(|&g| g <= MAX_GRID)
        .ok_or_else(|| {
            err(format!(
                "layout `{name}`: its tiles over {} need more than {MAX_GRID} blocks",
                out.shape_text()
            ))
        })?;
    let names = ["th_x", "th_y", "th_z", "bl_x", "bl_y", "bl_z"];
    let sizes = [threads, 1, 1, grid, 1, 1];
    let dims: Vec<Variable> = names
        .iter()
        .zip(sizes)
        .map(|(v, s)| Variable::new(*v, 0, s - 1))
        .collect();
    let mut ranges = Vec::new();
    let mut value = Expr::constant(0);
    if chunks > 1 {
        ranges.push(Variable::new("chunk_id", 0, chunks - 1));
        value = Expr::var(6).mul(Expr::constant(w));
    }
    if w > 1 {
        ranges.push(Variable::new("unroll_id", 0, w - 1));
        value = value.add(Expr::var(6 + ranges.len() as u32 - 1));
    }
    let (th_x, bl_x) = (Expr::var(0), Expr::var(3));
    let at = |e: Expr| e.substitute(&mut |v| if v == 0 { th_x } else { value });
    let local: Vec<Expr> = block.map.results.iter().map(|&e| at(e)).collect();
    let mut constraints: Vec<(Expr, Interval)> = block
        .map
        .constraints
        .iter()
        .map(|&(e, iv)| (at(e), iv))
        .collect();
    let c = Expr::constant;
    // A mask over whole vectors when it can be: `e` (a coordinate, or the flat offset)
    // below `extent`. The coordinates other than the minor one are the same for every
    // element of a vector, and the minor one starts at a multiple of `w` (both checked by
    // `vector_width` on every thread and chunk), so with `extent` a multiple of `w`,
    // `e(unroll_id) <= extent - 1` for one element of the vector iff `e(0) <= extent - w`
    // (`extent - 1` off the minor coordinate) for all of them: the vector is in or out
    // whole, and the emitter may load it at once.
    let u = (w > 1).then(|| 6 + ranges.len() as u32 - 1);
    let mask = |e: Expr, extent: i64, minor: bool| -> (Expr, Interval) {
        match u {
            Some(u) if !minor || extent % w == 0 => (
                e.substitute(&mut |v| if v == u { c(0) } else { Expr::var(v) }),
                Interval::new(0, extent - if minor { w } else { 1 }),
            ),
            _ => (e, Interval::new(0, extent - 1)),
        }
    };
    let mut results = vec![c(0); out.rank()];
    let masked;
    if flat {
        // The tile's offsets continue the output's physical order.
        let t = block.tile[0];
        let lin = bl_x.mul(c(t)).add(local[0]);
        masked = n % t != 0;
        if masked {
            constraints.push(mask(lin, n, true));
        }
        let mut stride = 1i64;
        for (k, &d) in phys.iter().enumerate().rev() {
            let q = if stride == 1 {
                lin
            } else {
                lin.floordiv(c(stride))
            };
            results[d] = if k == 0 { q } else { q.modulo(c(out.dims[d])) };
            stride = stride
                .checked_mul(out.dims[d])
                .ok_or_else(|| MapError::Overflow("the output's size".into()))?;
        }
    } else {
        // Block `bl_x` is tile number bl_x in the output's physical order.
        let mut stride = 1i64;
        let mut origin = vec![c(0); out.rank()];
        for (k, &d) in phys.iter().enumerate().rev() {
            let q = if stride == 1 {
                bl_x
            } else {
                bl_x.floordiv(c(stride))
            };
            origin[d] = if k == 0 { q } else { q.modulo(c(tiles[d])) };
            stride *= tiles[d];
        }
        let mut any = false;
        for d in 0..out.rank() {
            results[d] = origin[d].mul(c(block.tile[d])).add(local[d]);
            if out.dims[d] % block.tile[d] != 0 {
                any = true;
                constraints.push(mask(results[d], out.dims[d], Some(d) == minor));
            }
        }
        masked = any;
    }
    let map = IndexingMap::new(dims, ranges, vec![], results, constraints);
    let map = crate::simplify::simplify(&map, &Default::default()).map;
    Ok(LayoutLaunch {
        name: name.to_string(),
        block,
        tiles,
        masked,
        launch: Launch {
            strategy: Strategy::Loop,
            config: LaunchConfig {
                block: threads,
                vector: w,
                unroll: 1,
                max_blocks: MAX_GRID,
            },
            block: [threads, 1, 1],
            grid: [grid, 1, 1],
            write_map: map.clone(),
            read_map: map,
            read_from: 0,
            row_threads: 1,
            rows_per_thread: 1,
            parts: vec![],
        },
    })
}

impl LayoutLaunch {
    /// `layout tri: 32 threads × 4 values per 4 x 32 tile, 16 x 2 tiles (masked at the
    /// edges); block 32, grid 32, vector 4`.
    pub fn describe(&self) -> String {
        let b = &self.block;
        let l = &self.launch;
        let mut s = format!(
            "layout {}: {} thread{} × {} value{} per {}, {} tile{}{}; block {}, grid {}",
            self.name,
            b.threads,
            if b.threads == 1 { "" } else { "s" },
            b.values,
            if b.values == 1 { "" } else { "s" },
            tile_text(&b.tile),
            self.tiles
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(" x "),
            if self.tiles.iter().product::<i64>() == 1 {
                ""
            } else {
                "s"
            },
            if self.masked {
                " (masked at the edges)"
            } else {
                ""
            },
            l.block[0],
            l.grid[0]
        );
        if l.config.vector > 1 {
            s += &format!(", vector {}", l.config.vector);
        }
        // (Without a vector, the values already say it.)
        if l.config.vector > 1 && l.chunks() > 1 {
            s += &format!(", {} vectors per thread", l.chunks());
        }
        s
    }

    /// The comment lines above the CUDA kernel: the launch, its grid and block, and the
    /// layout it came from.
    pub fn source_header(&self) -> String {
        let rules = vec![
            format!("(thread, value) → tile: {}", self.block.map),
            "block bl_x computes tile bl_x in the output's physical order".to_string(),
        ];
        let mut h = self.launch.source_header(None, &rules);
        h = h.replacen(
            &format!("// launch: {}", self.launch.describe()),
            &format!("// launch: {}", self.describe()),
            1,
        );
        h
    }

    /// The host kernel that runs this launch's loop nest: blocks (split across CPU
    /// threads), then each vector of values (`chunk_id`), then the block's threads in
    /// order, each its vector (`unroll_id`): a warp's vector access in one step, in address
    /// order when the layout is coalesced. Every element is computed where the layout puts
    /// it.
    pub fn emit_cpu(&self, spec: &KernelSpec, naive: bool) -> Result<Emitted, MapError> {
        let wm = &self.launch.write_map;
        let nd = wm.dims.len() as u32;
        // New order: bl_x, chunk_id, th_x, unroll_id; th_y, th_z, bl_y, bl_z are 0.
        let mut order: Vec<u32> = vec![3];
        let mut last = None;
        for (k, r) in wm.ranges.iter().enumerate() {
            if r.name == "unroll_id" {
                last = Some(nd + k as u32);
            } else {
                order.push(nd + k as u32);
            }
        }
        order.push(0);
        order.extend(last);
        let dims: Vec<Variable> = order.iter().map(|&v| wm.var(v as usize).clone()).collect();
        let to = |e: Expr| {
            e.substitute(&mut |v| match order.iter().position(|&o| o == v) {
                Some(k) => Expr::var(k as u32),
                None => Expr::constant(0),
            })
        };
        let lm = IndexingMap::new(
            dims,
            vec![],
            vec![],
            wm.results.iter().map(|&e| to(e)).collect(),
            wm.constraints.iter().map(|&(e, iv)| (to(e), iv)).collect(),
        );
        let name = format!(
            "{}_layout{}",
            emit::c_ident(&spec.name),
            if naive { "_naive" } else { "" }
        );
        let title = format!(
            "// {} for the CPU in the order of layout {}: each block, then each vector of values, then the block's threads, each its vector; index arithmetic {}.\n",
            spec.name,
            self.name,
            if naive {
                "naive (delinearize, apply each map, linearize)"
            } else {
                "from the simplified maps"
            }
        );
        emit::cpu::emit_nest(spec, naive, &lm, &name, &title)
    }
}

pub fn join(xs: &[i64]) -> String {
    xs.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_name_every_field_that_is_set() {
        let m = Mapping {
            config: LaunchConfig {
                block: 256,
                vector: 4,
                unroll: 2,
                ..Default::default()
            },
            tiled: Some(false),
            tile: Some(vec![32, 64]),
            ..Default::default()
        };
        assert_eq!(
            m.args(),
            "block=256 vector=4 unroll=2 tiled=false tile=(32, 64)"
        );
        assert_eq!(Mapping::default().args(), "block=128 vector=1 unroll=1");
        assert_eq!(
            Mapping::default().cpu_text(),
            "the untiled loop over the output"
        );
        assert!(m.gpu_text().contains("4 elements per vector, 2 vectors"));
    }
}
