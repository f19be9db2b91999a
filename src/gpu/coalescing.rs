//! Coalescing: do the threads of a warp read neighbouring bytes?
//!
//! For each access we compose three maps, as XLA's coalescing analysis does: thread ids →
//! output (the launch), output → operand (the fusion), and the operand's logical →
//! linearized physical layout. The result gives the element offset every thread reads. For
//! each warp and each load instruction (one value of the loop variables; the elements of a
//! vector belong to one load) we collect the byte addresses of the active threads and
//! count the distinct 32-byte sectors and 128-byte lines they touch, against the ideal: the
//! same bytes packed densely.
//!
//! ```text
//! transpose f32[2048,2048]{1,0} -> {1,0}, loop mapping:   32 sectors per warp, ideal 4
//! the same with 32×32 shared-memory tiles:                  4 sectors per warp, ideal 4
//! ```
//!
//! A load is *efficient* when it touches at most one sector more than the ideal (a warp's
//! bytes that straddle a sector boundary); an access is coalesced when every load checked
//! is efficient. Large launches are sampled: the first blocks, the last block (the ragged
//! edge) and blocks spread evenly between.
//!
//! Every launch is analysed: loops, tiled transposes, reductions (side outputs and groups
//! included), and the launches of several loops (a concatenate's operands, the update of a
//! dynamic-update-slice or a scatter, with the start indices and index vectors they read).
//! A row normalization (and a row reduction that nests reductions of its row) is read as
//! its kernel reads it: each reduction of a row once, split over the row's lanes (loop
//! `step`), then the row's elements (loop `col`), not each reduction whole by every thread.
//! What the maps cannot say is assumed, and the report says so: a variable that is not
//! the launch's own loop — a start index read at run time (`dynamic-slice`, `gather`, the
//! store of a `dynamic-update-slice`), a loop of the fusion (a reduction inside a loop
//! fusion) — is taken as one value for the whole warp, and each value is a load of its own
//! (small ranges in full, wide ones sampled). An input the fusion never reads gets a row
//! saying so (XLA counts it as coalesced).
//!
//! Beside the count, each read gets XLA's own verdict ([`xla_indexing_coalesced`]): the
//! first warp only, runtime variables at their midpoints, 128-byte transactions against
//! the ideal with a 0.9 margin.
//!
//! Shown running in `sessions/gpu/coalescing.ixm`, `sessions/gpu/coalescing-fusions.ixm` and
//! `sessions/gpu/coalescing-rows.ixm`.

use super::launch::{
    accesses, in_group, more_output_writes, reads_through_tile, split_on, thread_dims,
    thread_to_input, Launch, Strategy, WARP,
};
use super::rows;
use super::spec::{Body, KernelSpec, Root, Tensor};
use crate::expr::Expr;
use crate::interval::Interval;
use crate::map::{compose, IndexingMap, Variable};
use crate::simplify::{simplify, SimplifyLimits};
use crate::MapError;

pub mod heuristic;

pub const SECTOR: i64 = 32;
pub const LINE: i64 = 128;

/// Most address evaluations one analysis does before it samples.
const BUDGET: u64 = 1 << 20;

/// A variable the launch does not loop over (a start read at run time, a loop inside the
/// fusion) is checked at every value up to this many; a wider range is sampled.
const FULL_VALUES: i64 = 16;

/// The launch's own loop is checked at every value up to this many; a longer one (a
/// grid capped at its maximum, whose threads loop over millions of chunks) is sampled as
/// the others are, with this many values.
const OWN_VALUES: i64 = 1024;

/// The launch's own per-thread loops: every value is one load by every thread of the warp
/// (`unroll_id`, the elements of one vector, is the exception: one load). `i` is a row
/// normalization's row of the thread ([`super::launch::Launch::rows_per_thread`]).
const LAUNCH_LOOPS: [&str; 7] = ["chunk_id", "unroll_id", "row", "col", "entry", "step", "i"];

/// Whether a range variable is a start read at run time (`rt0`, `rt1_1`: the fusion's
/// dynamic slices and gathers name their shifts so, see `spec::dyn_call_reach`).
pub fn read_at_run_time(name: &str) -> bool {
    name.strip_prefix("rt").is_some_and(|r| {
        !r.is_empty()
            && r.chars().next().is_some_and(|c| c.is_ascii_digit())
            && r.chars().all(|c| c.is_ascii_digit() || c == '_')
    })
}

/// One warp's worst load.
#[derive(Clone, Debug, PartialEq)]
pub struct WarpLoad {
    pub block: i64,
    pub warp: i64,
    /// The loop variables of the load (`row=3`), empty for a single load.
    pub at: String,
    pub sectors: i64,
    pub ideal: i64,
    pub elements: i64,
}

/// A variable of an access that the launch does not loop over: its value is not a thread's
/// to choose. The analysis takes it as one value for the whole warp (every thread of the
/// warp reads at the same start, or the same step of the fusion's own loop) and checks each
/// value as a separate load.
#[derive(Clone, Debug, PartialEq)]
pub struct Assumed {
    pub name: String,
    pub bounds: Interval,
    /// A runtime variable of the map (`rt0`: a start index read when the kernel runs), as
    /// opposed to a range variable (a start the fusion reads, folded into a range, or a
    /// loop of the fusion such as a reduction inside it).
    pub runtime: bool,
    /// How many of its values were checked (all of them when the range is small).
    pub checked: i64,
}

/// The verdict for one operand (or output).
#[derive(Clone, Debug, PartialEq)]
pub struct OperandReport {
    pub label: String,
    /// Which input this is (`Some(K)` for operand K), or `None` for an output's write.
    pub operand: Option<usize>,
    pub tensor: Tensor,
    /// Thread ids → element offset in memory; `None` when the fusion never reads the
    /// operand (XLA counts such an operand as coalesced).
    pub offsets: Option<IndexingMap>,
    pub through_tile: bool,
    pub loads: u64,
    pub sectors: u64,
    pub ideal_sectors: u64,
    pub lines: u64,
    pub ideal_lines: u64,
    pub coalesced: bool,
    pub worst: Option<WarpLoad>,
    /// XLA's own verdict for a read (`IsIndexingCoalesced`, see [`xla_indexing_coalesced`]);
    /// `None` for a write, which XLA's analysis does not judge.
    pub xla: Option<bool>,
    /// How far the offset moves when `th_x` moves by one, at the origin.
    pub th_x_stride: Option<i64>,
    /// The variables taken as one value per warp (see [`Assumed`]).
    pub assumed: Vec<Assumed>,
    /// Whether a loop of the launch's own was sampled, not checked at every value.
    pub loops_sampled: bool,
}

impl OperandReport {
    /// Whether the fusion reads (or writes) it at all: a map that is known empty counts as
    /// never read.
    pub fn read(&self) -> bool {
        self.offsets.as_ref().is_some_and(|m| !m.is_known_empty())
    }
}

#[derive(Clone, Debug)]
pub struct Report {
    pub blocks_checked: i64,
    pub warps_checked: i64,
    pub sampled: bool,
    pub operands: Vec<OperandReport>,
}

/// One access a launch makes: thread ids → the logical index of a tensor.
struct Access {
    label: String,
    operand: Option<usize>,
    tensor: Tensor,
    map: Option<IndexingMap>,
    /// The launch's map the access was composed from (thread ids → the index a thread
    /// works on): its loops are the loads.
    from: IndexingMap,
    /// Thread ids → the tensor's index as composed, not simplified: every variable kept,
    /// so its domain says exactly which threads read in which iteration (the simplified map
    /// may have folded a loop's constraint into the loop's bounds and dropped it).
    raw: IndexingMap,
    through_tile: bool,
}

fn finish(m: IndexingMap) -> IndexingMap {
    simplify(&m, &SimplifyLimits::default()).map
}

/// Analyses every input access and every output write of `launch`: loops, tiled
/// transposes, reductions (with their side outputs and groups), and the launches of
/// several loops (a concatenate's operands, a dynamic-update-slice's or a scatter's update,
/// with their start indices and indices). An input the fusion never reads gets a row of
/// its own.
pub fn analyse(spec: &KernelSpec, launch: &Launch) -> Result<Report, MapError> {
    let accs = collect(spec, launch)?;
    let threads = launch.block[0];
    let groups = launch.grid[1].max(1);
    // What one block costs: threads × the loads each makes, summed over the accesses.
    let mut plans = Vec::new();
    let mut per_block: u64 = 0;
    for a in &accs {
        let plan = match &a.map {
            Some(m) => Some(Plan::new(&a.tensor, m, &a.from, &a.raw)?),
            None => None,
        };
        if let Some(p) = &plan {
            per_block = per_block.saturating_add(
                (threads as u64)
                    .saturating_mul(groups as u64)
                    .saturating_mul(p.points_per_thread()),
            );
        }
        plans.push(plan);
    }
    let blocks = pick_blocks(launch.grid[0], per_block);
    let nwarps = (threads + WARP - 1) / WARP;
    let mut operands = Vec::new();
    for (a, plan) in accs.into_iter().zip(plans) {
        let mut one = match plan {
            Some(p) => count(&a, p, launch, &blocks, groups)?,
            None => OperandReport {
                label: a.label.clone(),
                operand: a.operand,
                tensor: a.tensor.clone(),
                offsets: None,
                through_tile: false,
                loads: 0,
                sectors: 0,
                ideal_sectors: 0,
                lines: 0,
                ideal_lines: 0,
                coalesced: true,
                worst: None,
                xla: Some(true),
                th_x_stride: None,
                assumed: vec![],
                loops_sampled: false,
            },
        };
        if a.operand.is_none() {
            one.xla = None;
        }
        operands.push(one);
    }
    Ok(Report {
        blocks_checked: blocks.len() as i64 * groups,
        warps_checked: blocks.len() as i64 * groups * nwarps,
        sampled: (blocks.len() as i64) < launch.grid[0]
            || operands.iter().any(|o| o.loops_sampled)
            || operands.iter().any(|o| {
                o.assumed
                    .iter()
                    .any(|v| v.checked < v.bounds.hi - v.bounds.lo + 1)
            }),
        operands,
    })
}

/// The reduced function of output `o`'s body, when it is a reduction (or its conversion).
fn reduced_func(b: &Body) -> Option<usize> {
    match b {
        Body::Reduce { func, .. } => Some(*func),
        Body::Convert(_, inner) => reduced_func(inner),
        _ => None,
    }
}

/// Every access of the launch, reads first (in input order, each distinct map once), then
/// the writes; inputs never read get a row without a map.
fn collect(spec: &KernelSpec, launch: &Launch) -> Result<Vec<Access>, MapError> {
    type Read = (usize, IndexingMap, bool, IndexingMap, IndexingMap);
    let mut reads: Vec<Read> = Vec::new();
    let mut add =
        |input: usize, m: IndexingMap, tile: bool, from: &IndexingMap, raw: IndexingMap| {
            if !reads.iter().any(|(k, x, _, _, _)| *k == input && *x == m) {
                reads.push((input, m, tile, from.clone(), raw));
            }
        };
    let mut writes: Vec<(Tensor, IndexingMap)> = Vec::new();
    if launch.strategy == Strategy::RowNormalization || rows::row_kernel_reduction(spec, launch)? {
        // The kernel reads each reduction of the row once, split over the row's lanes,
        // not whole by every thread (the maps of `accesses`).
        for (input, from, raw) in row_reads(spec, launch)? {
            add(input, finish(raw.clone()), false, &from, raw);
        }
        writes.push((spec.output.clone(), launch.write_map.clone()));
    } else if launch.parts.is_empty() {
        for acc in accesses(spec, launch)? {
            let tile = reads_through_tile(spec, launch, &acc);
            let from = if tile || launch.read_from != 0 {
                &launch.read_map
            } else {
                &launch.write_map
            };
            let raw = compose(from, &acc.map)?;
            add(
                acc.input,
                thread_to_input(spec, launch, &acc)?,
                tile,
                from,
                raw,
            );
        }
        writes.push((spec.output.clone(), launch.write_map.clone()));
        if !spec.more_outputs.is_empty() {
            let ws = more_output_writes(spec, launch)?;
            for (o, w) in spec.more_outputs.iter().zip(ws) {
                // A loop or a transpose reads what a further output needs from output 0's
                // index (already among the accesses); a reduction launch reads a further
                // reduction's operand with its read map, any other output where it is
                // written.
                if launch.read_from != 0 {
                    let (from, accs) = match reduced_func(&spec.functions[o.func].body) {
                        Some(f) => (
                            in_group(&launch.read_map, w.group),
                            spec.accesses_from(f, &IndexingMap::identity(&spec.functions[f].dims))?,
                        ),
                        None => (
                            w.map.clone(),
                            spec.accesses_from(o.func, &IndexingMap::identity(&o.tensor.dims))?,
                        ),
                    };
                    for acc in accs {
                        let raw = compose(&from, &acc.map)?;
                        add(acc.input, finish(raw.clone()), false, &from, raw);
                    }
                }
                writes.push((o.tensor.clone(), w.map));
            }
        }
    } else {
        for p in &launch.parts {
            let f = spec
                .functions
                .get(p.func)
                .ok_or_else(|| MapError::Other(format!("no function {}", p.func)))?;
            for acc in spec.accesses_from(p.func, &IndexingMap::identity(&f.dims))? {
                let raw = compose(&p.read, &acc.map)?;
                add(acc.input, finish(raw.clone()), false, &p.read, raw);
            }
            for (input, raw, from) in start_reads(spec, &p.read)? {
                add(input, finish(raw.clone()), false, &from, raw);
            }
            writes.push((spec.output.clone(), p.write.clone()));
        }
    }
    reads.sort_by_key(|(k, _, _, _, _)| *k);
    let mut out = Vec::new();
    for (k, t) in spec.inputs.iter().enumerate() {
        let mine: Vec<&Read> = reads.iter().filter(|(i, _, _, _, _)| *i == k).collect();
        if mine.is_empty() {
            out.push(Access {
                label: t.name.clone(),
                operand: Some(k),
                tensor: t.clone(),
                map: None,
                from: launch.write_map.clone(),
                raw: launch.write_map.clone(),
                through_tile: false,
            });
        }
        for (n, (_, m, tile, from, raw)) in mine.iter().enumerate() {
            out.push(Access {
                label: if mine.len() > 1 {
                    format!("{} #{}", t.name, n + 1)
                } else {
                    t.name.clone()
                },
                operand: Some(k),
                tensor: t.clone(),
                map: Some(m.clone()),
                from: from.clone(),
                raw: raw.clone(),
                through_tile: *tile,
            });
        }
    }
    for (n, (t, m)) in writes.iter().enumerate() {
        let same = writes.iter().filter(|(x, _)| x.name == t.name).count();
        let label = if same > 1 {
            let k = writes[..n].iter().filter(|(x, _)| x.name == t.name).count();
            format!("{} (write #{})", t.name, k + 1)
        } else {
            format!("{} (write)", t.name)
        };
        out.push(Access {
            label,
            operand: None,
            tensor: t.clone(),
            map: Some(m.clone()),
            from: m.clone(),
            raw: m.clone(),
            through_tile: false,
        });
    }
    Ok(out)
}

/// The reads of a row normalization as its kernel makes them (`emit::cuda_rows`): the
/// row's elements, each lane its own ([`rows::element_scope`], the launch's map), and each
/// reduction of the row once, its elements split over the row's lanes (lane `l` folds
/// elements `l, l + row_threads, ..`, `vector` at a time: [`rows::lane_split`], its loop
/// named `step`); a reduction read inside another is computed once per row as well, before
/// it, with the enclosing reduction's vector. A row reduction whose operand reads
/// reductions of its own row is written by the same kernel ([`rows::row_kernel_reduction`],
/// the sum of `exp(x - max)`): the max once per row, split over the lanes like the sum.
/// Each read: (input, thread ids → the index of
/// the function it is read in, with the loops, thread ids → the input's index as composed).
fn row_reads(
    spec: &KernelSpec,
    launch: &Launch,
) -> Result<Vec<(usize, IndexingMap, IndexingMap)>, MapError> {
    let rt = launch.row_threads.max(1);
    let vector = launch.config.vector.max(1);
    // The scope of function 0: the row's elements, or a root reduction's output (one
    // element a row, its reduction the row's, nested ones before it).
    let (scope, rows) = if launch.strategy == Strategy::RowNormalization {
        let lm = rows::rows_of(spec)?.ok_or_else(|| {
            MapError::Other(format!("{}: a row normalization needs rows", spec.name))
        })?;
        let rows = lm.dims[0].bounds.hi + 1;
        (rows::element_scope(&lm, rt, vector)?, rows)
    } else {
        (rows::root_scope(spec, rt)?, spec.output.num_elements()?)
    };
    let groups = launch.block[0] / rt;
    let per_thread = launch.rows_per_thread.max(1);
    let rows_per_block = groups * per_thread;
    // Thread ids → (row, lane), as the kernel numbers them; past the last row, nothing.
    // With several rows a thread, its row `i` (a loop of the kernel) is a range.
    let th_x = Expr::var(0);
    let dims = thread_dims(launch.block, launch.grid);
    let mut row = Expr::var(3)
        .mul(Expr::constant(rows_per_block))
        .add(th_x.floordiv(Expr::constant(rt)));
    let mut ranges = vec![];
    if per_thread > 1 {
        row = row.add(Expr::var(dims.len() as u32).mul(Expr::constant(groups)));
        ranges.push(Variable::new("i", 0, per_thread - 1));
    }
    // The launch's ids over their whole extents (the simplified write map may have narrowed
    // them to the threads that write: one lane where each output element is a row).
    let thread = IndexingMap::new(
        dims,
        ranges,
        vec![],
        vec![row, th_x.modulo(Expr::constant(rt))],
        vec![(row, Interval::new(0, rows - 1))],
    );
    let mut walk = RowWalk {
        spec,
        rt,
        thread,
        done: Vec::new(),
        out: Vec::new(),
        share_calls: spec.inline_nodes_exceed(super::spec::INLINE_NODES),
        walked: Default::default(),
    };
    walk.phase(0, &scope, vector, 0)?;
    Ok(walk.out)
}

/// [`row_reads`]'s walk over the kernel's phases.
struct RowWalk<'a> {
    spec: &'a KernelSpec,
    rt: i64,
    /// Thread ids → `(r, lane)`.
    thread: IndexingMap,
    /// The reductions written so far: (function, op and init, the row's map).
    done: Vec<(usize, String, IndexingMap)>,
    out: Vec<(usize, IndexingMap, IndexingMap)>,
    /// Where the emitters keep a called function's value and read it again
    /// ([`KernelSpec::inline_nodes_exceed`]): each function at each index and phase is
    /// walked once, as the kernel reads it once (its calls, written in place, would repeat
    /// exponentially).
    share_calls: bool,
    walked: std::collections::HashSet<(usize, IndexingMap, IndexingMap)>,
}

/// What a phase's body holds, taken out of it before the walk goes on.
enum RowItem {
    Load(usize, IndexingMap),
    Call(usize, IndexingMap),
    Reduce(usize, String, IndexingMap),
}

impl RowWalk<'_> {
    /// Function `func` read at `scope` (`(r, lane)[loops] -> its index`), elements `vector`
    /// at a time.
    fn phase(
        &mut self,
        func: usize,
        scope: &IndexingMap,
        vector: i64,
        depth: usize,
    ) -> Result<(), MapError> {
        let from = compose(&self.thread, scope)?;
        self.body(func, scope, &from, vector, depth)
    }

    fn body(
        &mut self,
        func: usize,
        ctx: &IndexingMap,
        from: &IndexingMap,
        vector: i64,
        depth: usize,
    ) -> Result<(), MapError> {
        if depth > self.spec.functions.len() + 64 {
            return Err(MapError::Other(
                "the functions of the kernel call each other in a cycle".into(),
            ));
        }
        let f = self
            .spec
            .functions
            .get(func)
            .ok_or_else(|| MapError::Other(format!("no function {func}")))?;
        let mut items = Vec::new();
        f.body.visit(&mut |b| match b {
            Body::Load { input, map } => items.push(RowItem::Load(*input, map.clone())),
            Body::Call { func, map } => items.push(RowItem::Call(*func, map.clone())),
            Body::Reduce {
                op,
                init,
                func,
                map,
            } => items.push(RowItem::Reduce(
                *func,
                format!("{op:?} {init}"),
                map.clone(),
            )),
            _ => {}
        });
        for it in items {
            match it {
                RowItem::Load(input, map) => {
                    let at = rows::substitute(ctx, &map)?;
                    let raw = compose(&self.thread, &at)?;
                    self.out.push((input, from.clone(), raw));
                }
                RowItem::Call(g, map) => {
                    let at = rows::substitute(ctx, &map)?;
                    if self.share_calls && !self.walked.insert((g, at.clone(), from.clone())) {
                        continue;
                    }
                    self.body(g, &at, from, vector, depth + 1)?;
                }
                RowItem::Reduce(g, how, map) => {
                    let m = rows::substitute(ctx, &map)?;
                    let canon = rows::canonical(ctx, &m).ok_or_else(|| {
                        MapError::Other(format!(
                            "{}: a reduction read inside the body is not per row",
                            self.spec.name
                        ))
                    })?;
                    // The emitter's key: the row's map simplified; the split is of the map
                    // as it is.
                    let key = finish(canon.clone());
                    if self
                        .done
                        .iter()
                        .any(|(f, h, c)| *f == g && *h == how && *c == key)
                    {
                        continue;
                    }
                    self.done.push((g, how, key));
                    let split = rows::lane_split(&canon, self.rt, vector)?;
                    let mut scope = split.map;
                    // The lane's steps through the reduction: a loop of the launch.
                    if let Some(j) = scope.ranges.first_mut() {
                        j.name = "step".into();
                    }
                    self.phase(g, &scope, split.vector, depth + 1)?;
                }
            }
        }
        Ok(())
    }
}

/// What a loop over an update reads besides its function: a dynamic-update-slice's start
/// indices (scalars, read by every thread) and a scatter's index vectors (the entries of
/// the vector its update element's batch coordinates pick, one per start; `entry` runs
/// over them), each from an input or computed in the fusion from inputs: (input, thread
/// ids → its index as composed, the launch map it came from).
fn start_reads(
    spec: &KernelSpec,
    read: &IndexingMap,
) -> Result<Vec<(usize, IndexingMap, IndexingMap)>, MapError> {
    let mut out = Vec::new();
    match &spec.root {
        Root::DynamicUpdateSlice {
            starts, computed, ..
        } => {
            let scalar = IndexingMap::new(
                read.dims.clone(),
                read.ranges.clone(),
                vec![],
                vec![],
                read.constraints.clone(),
            );
            for (d, &s) in starts.iter().enumerate() {
                match computed.get(d).copied().flatten() {
                    Some(f) => {
                        for acc in spec.accesses_from(f, &scalar)? {
                            out.push((acc.input, acc.map, read.clone()));
                        }
                    }
                    None => out.push((s, scalar.clone(), read.clone())),
                }
            }
        }
        Root::Scatter {
            indices,
            indices_func,
            ..
        } => {
            let g = spec.scatter_geometry().ok_or_else(|| {
                MapError::Other(format!(
                    "{}: the scatter's dimension numbers do not fit its shapes",
                    spec.name
                ))
            })?;
            let batch: Vec<Expr> = g.batch.iter().map(|&j| read.results[j]).collect();
            let mut ranges = read.ranges.clone();
            let entry = if g.index_vector_dim < g.indices_rank {
                ranges.push(Variable::new("entry", 0, g.starts.len() as i64 - 1));
                Expr::var((read.dims.len() + ranges.len() - 1) as u32)
            } else {
                Expr::constant(0)
            };
            let m = IndexingMap::new(
                read.dims.clone(),
                ranges,
                vec![],
                g.indices_index(&batch, entry),
                read.constraints.clone(),
            );
            match indices_func {
                Some(f) => {
                    for acc in spec.accesses_from(*f, &m)? {
                        out.push((acc.input, acc.map, m.clone()));
                    }
                }
                None => out.push((*indices, m.clone(), m)),
            }
        }
        _ => {}
    }
    Ok(out)
}

fn pick_blocks(grid: i64, per_block: u64) -> Vec<i64> {
    let affordable = (BUDGET / per_block.max(1)).max(3) as i64;
    if grid <= affordable {
        return (0..grid).collect();
    }
    let mut v: Vec<i64> = vec![0, 1, grid - 1];
    let spread = affordable - 3;
    for i in 1..=spread {
        v.push(i * (grid - 1) / (spread + 1));
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Where a variable of the composed offset map takes its value.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Src {
    Loop(usize),
    Vector,
    Free,
}

/// Most points of the free variables searched for one address.
const FREE_POINTS: u64 = 4096;

/// The address the composed map `raw` gives with the loop values `at` and vector element
/// `e` at the thread ids `ids` (a free variable: the first value that lies in the domain),
/// or `None` when the thread reads nothing there.
fn raw_address(
    raw: &IndexingMap,
    src: &[Src],
    loops: &[Loop],
    at: &[usize],
    ids: [i64; 6],
    e: i64,
) -> Result<Option<i64>, MapError> {
    let nd = raw.dims.len();
    let mut p = vec![0i64; raw.num_vars()];
    p[..6.min(nd)].copy_from_slice(&ids[..6.min(nd)]);
    let mut free = Vec::new();
    let bounds = raw.bounds();
    for (i, s) in src.iter().enumerate() {
        match s {
            Src::Loop(k) => p[nd + i] = loops[*k].values[at[*k]],
            Src::Vector => p[nd + i] = e,
            Src::Free => {
                free.push(nd + i);
                p[nd + i] = bounds[nd + i].lo;
            }
        }
    }
    if free.is_empty() {
        return Ok(raw.eval_point(&p)?.map(|r| r[0]));
    }
    let points = free.iter().fold(1u64, |n, &v| {
        n.saturating_mul(bounds[v].size().unwrap_or(u64::MAX))
    });
    if points > FREE_POINTS {
        return Err(MapError::Other(format!(
            "the access has {points} values of variables its offset does not use to search"
        )));
    }
    loop {
        if let Some(r) = raw.eval_point(&p)? {
            return Ok(Some(r[0]));
        }
        let mut i = free.len();
        loop {
            if i == 0 {
                return Ok(None);
            }
            i -= 1;
            let v = free[i];
            if p[v] < bounds[v].hi {
                p[v] += 1;
                break;
            }
            p[v] = bounds[v].lo;
        }
    }
}

/// One loop of an access: every combination of the loops' values is a load of every
/// thread of the warp.
struct Loop {
    name: String,
    values: Vec<i64>,
    /// Where the variable sits in the launch's map and in the offset map (the offset map
    /// may have lost a launch loop it does not depend on, and has the fusion's own).
    in_from: Option<usize>,
    in_offsets: Option<usize>,
    /// Some of its values, not all ([`values`]).
    sampled: bool,
}

/// How one access is enumerated: its offset map, the launch map it came from, the vector
/// variable, and the loops.
struct Plan {
    offsets: IndexingMap,
    from: IndexingMap,
    /// The offset as composed (every variable kept) and where each of its variables past
    /// the thread ids takes its value: `None` when names collide (then the simplified map
    /// and the launch's map decide).
    raw: Option<(IndexingMap, Vec<Src>)>,
    /// `unroll_id` in `from` and in `offsets`: the elements of one vector, one load.
    vector: Option<(usize, Option<usize>, Interval)>,
    loops: Vec<Loop>,
    assumed: Vec<Assumed>,
}

/// The values of a variable checked: all of a launch's own loop, or of a small range; the
/// first, the last and values spread between of a wide range of anything else (start
/// indices repeat their pattern shifted; the first values cover every alignment of a
/// small stride).
fn values(b: Interval, full: bool) -> Vec<i64> {
    if !sampled(b, full) {
        return (b.lo..=b.hi).collect();
    }
    let most = if full { OWN_VALUES } else { FULL_VALUES };
    let mut v: Vec<i64> = (b.lo..b.lo + 8).collect();
    for i in 1..most - 8 {
        // in i128: (hi - lo) * i may pass 2^63; the sum lies in [lo, hi]
        let step = i as i128 * (b.hi as i128 - b.lo as i128) / (most - 8) as i128;
        v.push((b.lo as i128 + step) as i64);
    }
    v.push(b.hi);
    v.sort_unstable();
    v.dedup();
    v
}

/// Whether [`values`] samples the range rather than listing it.
fn sampled(b: Interval, full: bool) -> bool {
    let most = if full { OWN_VALUES } else { FULL_VALUES };
    b.hi as i128 - b.lo as i128 >= most as i128
}

impl Plan {
    fn new(
        t: &Tensor,
        to_logical: &IndexingMap,
        from: &IndexingMap,
        raw: &IndexingMap,
    ) -> Result<Plan, MapError> {
        let offsets = finish(compose(to_logical, &t.layout_map()?)?);
        let raw = compose(raw, &t.layout_map()?)?;
        let position = |m: &IndexingMap, name: &str| {
            (m.dims.len()..m.num_vars()).find(|&i| m.var(i).name == name)
        };
        let mut vector = None;
        let mut loops: Vec<Loop> = Vec::new();
        let mut assumed = Vec::new();
        let fb = from.bounds();
        for s in from.dims.len()..from.num_vars() {
            let v = from.var(s);
            if v.name == "unroll_id" {
                vector = Some((s, position(&offsets, &v.name), fb[s]));
                continue;
            }
            let own =
                s < from.dims.len() + from.ranges.len() && LAUNCH_LOOPS.contains(&v.name.as_str());
            loops.push(Loop {
                name: v.name.clone(),
                values: values(fb[s], own),
                in_from: Some(s),
                in_offsets: position(&offsets, &v.name),
                sampled: sampled(fb[s], own),
            });
            if !own {
                let l = loops.last().expect("pushed");
                assumed.push(Assumed {
                    name: v.name.clone(),
                    bounds: fb[s],
                    runtime: s >= from.dims.len() + from.ranges.len() || read_at_run_time(&v.name),
                    checked: l.values.len() as i64,
                });
            }
        }
        let ob = offsets.bounds();
        for s in offsets.dims.len()..offsets.num_vars() {
            let v = offsets.var(s);
            if position(from, &v.name).is_some() {
                continue;
            }
            loops.push(Loop {
                name: v.name.clone(),
                values: values(ob[s], false),
                in_from: None,
                in_offsets: Some(s),
                sampled: sampled(ob[s], false),
            });
            let l = loops.last().expect("pushed");
            assumed.push(Assumed {
                name: v.name.clone(),
                bounds: ob[s],
                runtime: s >= offsets.dims.len() + offsets.ranges.len()
                    || read_at_run_time(&v.name),
                checked: l.values.len() as i64,
            });
        }
        // Each variable of the composed map: a loop's (by name), the vector's, or free (a
        // variable the simplified map dropped: some value of it must satisfy the domain).
        let names: Vec<String> = (raw.dims.len()..raw.num_vars())
            .map(|i| raw.var(i).name.clone())
            .collect();
        let unique = names
            .iter()
            .enumerate()
            .all(|(i, n)| !names[..i].contains(n));
        let raw = unique.then(|| {
            let src = names
                .iter()
                .map(|n| {
                    if n == "unroll_id" && vector.is_some() {
                        Src::Vector
                    } else {
                        match loops.iter().position(|l| &l.name == n) {
                            Some(k) => Src::Loop(k),
                            None => Src::Free,
                        }
                    }
                })
                .collect();
            (raw, src)
        });
        Ok(Plan {
            offsets,
            from: from.clone(),
            raw,
            vector,
            loops,
            assumed,
        })
    }

    fn points_per_thread(&self) -> u64 {
        let per_vec = self
            .vector
            .map_or(1, |(_, _, b)| b.size().unwrap_or(u64::MAX));
        self.loops
            .iter()
            .fold(per_vec, |acc, l| acc.saturating_mul(l.values.len() as u64))
    }
}

fn count(
    a: &Access,
    plan: Plan,
    launch: &Launch,
    blocks: &[i64],
    groups: i64,
) -> Result<OperandReport, MapError> {
    let t = &a.tensor;
    let Plan {
        offsets,
        from,
        raw,
        vector,
        loops,
        assumed,
    } = plan;
    let bytes = t.elem.bytes();
    let nwarps = (launch.block[0] + WARP - 1) / WARP;
    let mut rep = OperandReport {
        label: a.label.clone(),
        operand: a.operand,
        tensor: t.clone(),
        offsets: Some(offsets.clone()),
        through_tile: a.through_tile,
        loads: 0,
        sectors: 0,
        ideal_sectors: 0,
        lines: 0,
        ideal_lines: 0,
        coalesced: true,
        worst: None,
        xla: Some(xla_indexing_coalesced(&offsets, bytes, t.rank() == 0)?),
        th_x_stride: None,
        assumed,
        loops_sampled: loops.iter().any(|l| l.sampled),
    };
    let mut pf = vec![0i64; from.num_vars()];
    let mut po = vec![0i64; offsets.num_vars()];
    let mut addrs: Vec<i64> = Vec::with_capacity(64);
    let (vlo, vhi) = vector.map_or((0, 0), |(_, _, b)| (b.lo, b.hi));
    for &b in blocks {
        for g in 0..groups {
            for w in 0..nwarps {
                // Every combination of the loop values is one load: an odometer.
                let mut at = vec![0usize; loops.len()];
                loop {
                    if crate::interrupted() {
                        return Err(MapError::Interrupted);
                    }
                    addrs.clear();
                    for lane in 0..WARP {
                        let th = w * WARP + lane;
                        if th >= launch.block[0] {
                            break;
                        }
                        for p in [&mut pf, &mut po] {
                            p.iter_mut().for_each(|x| *x = 0);
                            p[0] = th;
                            p[3] = b;
                            p[4] = g;
                        }
                        for (l, &i) in loops.iter().zip(&at) {
                            if let Some(k) = l.in_from {
                                pf[k] = l.values[i];
                            }
                            if let Some(k) = l.in_offsets {
                                po[k] = l.values[i];
                            }
                        }
                        for e in vlo..=vhi {
                            if let Some((kf, ko, _)) = vector {
                                pf[kf] = e;
                                if let Some(k) = ko {
                                    po[k] = e;
                                }
                            }
                            // Active in this iteration (the launch's map) and reading (the
                            // access's own conditions: a pad's edge reads nothing).
                            let addr = match &raw {
                                Some((m, src)) => {
                                    raw_address(m, src, &loops, &at, [th, 0, 0, b, g, 0], e)?
                                }
                                None if from.contains_point(&pf)? => {
                                    offsets.eval_point(&po)?.map(|r| r[0])
                                }
                                None => None,
                            };
                            if let Some(a) = addr {
                                addrs.push(
                                    a.checked_mul(bytes)
                                        .ok_or_else(|| MapError::Overflow("an address".into()))?,
                                );
                            }
                        }
                    }
                    if !addrs.is_empty() {
                        addrs.sort_unstable();
                        addrs.dedup();
                        let elements = addrs.len() as i64;
                        let sectors = distinct(&addrs, bytes, SECTOR);
                        let lines = distinct(&addrs, bytes, LINE);
                        let ideal = (elements * bytes + SECTOR - 1) / SECTOR;
                        rep.loads += 1;
                        rep.sectors += sectors as u64;
                        rep.ideal_sectors += ideal as u64;
                        rep.lines += lines as u64;
                        rep.ideal_lines += ((elements * bytes + LINE - 1) / LINE) as u64;
                        if sectors > ideal + 1 {
                            rep.coalesced = false;
                        }
                        let worse = match &rep.worst {
                            None => true,
                            Some(x) => sectors * x.ideal > x.sectors * ideal,
                        };
                        if worse {
                            let at = loops
                                .iter()
                                .zip(&at)
                                .map(|(l, &i)| format!("{}={}", l.name, l.values[i]))
                                .collect::<Vec<_>>()
                                .join(", ");
                            rep.worst = Some(WarpLoad {
                                block: b,
                                warp: w,
                                at,
                                sectors,
                                ideal,
                                elements,
                            });
                        }
                    }
                    // Next load.
                    let mut i = loops.len();
                    let mut done = true;
                    while i > 0 {
                        i -= 1;
                        if at[i] + 1 < loops[i].values.len() {
                            at[i] += 1;
                            done = false;
                            break;
                        }
                        at[i] = 0;
                    }
                    if done {
                        break;
                    }
                }
            }
        }
    }
    // How far the offset moves when th_x moves by one, at the origin.
    let bounds = offsets.bounds();
    let mut p0 = vec![0i64; offsets.num_vars()];
    for (s, b) in bounds.iter().enumerate().skip(offsets.dims.len()) {
        p0[s] = b.lo;
    }
    let mut p1 = p0.clone();
    p1[0] = 1;
    if let (Ok(Some(x)), Ok(Some(y))) = (offsets.eval_point(&p0), offsets.eval_point(&p1)) {
        rep.th_x_stride = Some(y[0] - x[0]);
    }
    Ok(rep)
}

/// The distinct `unit`-byte blocks the elements at these byte addresses (sorted, each
/// `elem` bytes long) touch: an element is counted in every block its bytes fall in.
fn distinct(sorted_addrs: &[i64], elem: i64, unit: i64) -> i64 {
    let mut n = 0;
    let mut last: Option<i64> = None;
    for &a in sorted_addrs {
        for u in a.div_euclid(unit)..=(a + elem - 1).div_euclid(unit) {
            if last.is_none_or(|l| u > l) {
                n += 1;
                last = Some(u);
            }
        }
    }
    n
}

/// XLA's verdict for one read (`IsIndexingCoalesced`, xla/service/gpu/model/
/// coalescing_analysis.cc), on `offsets` (thread ids → linearized element offset) of an
/// operand of `elem_bytes`-byte elements:
///
/// 1. an undefined map is not coalesced; an operand of rank 0 is;
/// 2. runtime variables (and the range variables that stand for starts read at run time,
///    [`read_at_run_time`]) are replaced by the midpoints of their ranges;
/// 3. only the first warp of block 0 is looked at (`th_x` in [0, 31], the other ids 0); an
///    empty map (the warp reads nothing) is coalesced;
/// 4. every range variable but the last (the innermost loop) is fixed at its lower bound;
/// 5. the offset must split into `f(th_x) + g(s)` (a term with both is not coalesced),
///    and at most one constraint may remain (and only one equal to the offset);
/// 6. the contiguous intervals of elements the warp reads: `f = th_x` (or `-th_x`) is 32
///    elements; `f = m·th_x` gives 32 runs of `g`'s range (one run when they overlap) when
///    `g = s`, else 32 elements; any other `f` is enumerated, each run extended by `s`'s
///    range when `g = s`;
/// 7. coalesced when the runs' 128-byte transactions (each run rounded up on its own) are
///    fewer than the ideal divided by 0.9.
pub fn xla_indexing_coalesced(
    offsets: &IndexingMap,
    elem_bytes: i64,
    rank0: bool,
) -> Result<bool, MapError> {
    if offsets.is_undefined() {
        return Ok(false);
    }
    if rank0 || offsets.results.is_empty() {
        return Ok(true);
    }
    let nd = offsets.dims.len() as u32;
    let nr = offsets.ranges.len() as u32;
    // 2 and 3: runtime variables at their midpoints, the ids but th_x at 0.
    let sub = |v: u32| -> Expr {
        let x = offsets.var(v as usize);
        if v >= 1 && v < nd {
            Expr::constant(0)
        } else if v >= nd + nr || (v >= nd && read_at_run_time(&x.name)) {
            Expr::constant((x.bounds.lo + x.bounds.hi) / 2)
        } else {
            Expr::var(v)
        }
    };
    let mut dims = offsets.dims.clone();
    for (i, d) in dims.iter_mut().enumerate() {
        d.bounds = if i == 0 {
            d.bounds.intersect(&Interval::new(0, WARP - 1))
        } else {
            Interval::point(0)
        };
    }
    if offsets.dims.iter().skip(1).any(|d| !d.bounds.contains(0)) {
        return Ok(true);
    }
    let results: Vec<Expr> = offsets
        .results
        .iter()
        .map(|&r| r.substitute(&mut |v| sub(v)))
        .collect();
    let constraints: Vec<(Expr, Interval)> = offsets
        .constraints
        .iter()
        .map(|&(e, iv)| (e.substitute(&mut |v| sub(v)), iv))
        .collect();
    let sample = finish(IndexingMap::new(
        dims,
        offsets.ranges.clone(),
        vec![],
        results,
        constraints,
    ));
    let sample = crate::map::remove_unused_symbols(&sample).0;
    if sample.is_known_empty() {
        return Ok(true);
    }
    if sample.is_undefined() || sample.results.len() != 1 {
        return Ok(false);
    }
    // 4: the outer loops at their first values.
    let sample = if sample.ranges.len() > 1 {
        let nd = sample.dims.len() as u32;
        let last = nd + sample.ranges.len() as u32 - 1;
        let lows: Vec<i64> = sample.ranges.iter().map(|v| v.bounds.lo).collect();
        let sub = |v: u32| -> Expr {
            if v >= nd && v < last {
                Expr::constant(lows[(v - nd) as usize])
            } else if v == last {
                Expr::var(nd)
            } else {
                Expr::var(v)
            }
        };
        let m = IndexingMap::new(
            sample.dims.clone(),
            vec![sample.ranges[sample.ranges.len() - 1].clone()],
            vec![],
            sample
                .results
                .iter()
                .map(|&r| r.substitute(&mut |v| sub(v)))
                .collect(),
            sample
                .constraints
                .iter()
                .map(|&(e, iv)| (e.substitute(&mut |v| sub(v)), iv))
                .collect(),
        );
        crate::map::remove_unused_symbols(&finish(m)).0
    } else {
        sample
    };
    if sample.is_known_empty() {
        return Ok(true);
    }
    let nd = sample.dims.len() as u32;
    let s0 = (!sample.ranges.is_empty()).then_some(nd);
    // 5: f(th_x) + g(s0), the constants dropped.
    let mut terms = Vec::new();
    sum_terms(sample.results[0], &mut terms);
    let (mut f, mut g) = (Vec::new(), Vec::new());
    for t in terms {
        let on_x = t.uses_var(0);
        let on_s = s0.is_some_and(|s| t.uses_var(s));
        if on_x && on_s {
            return Ok(false);
        }
        if on_x {
            f.push(t);
        }
        if on_s {
            g.push(t);
        }
    }
    let expr = sample.results[0];
    match sample.constraints.as_slice() {
        [] => {}
        [(e, _)] if *e == expr => {}
        _ => return Ok(false),
    }
    let f_expr = f.iter().fold(Expr::constant(0), |a, &t| a.add(t));
    let g_is_s = matches!((g.as_slice(), s0), ([t], Some(s)) if t.as_var() == Some(s));
    let s_bounds = s0.map(|s| sample.bounds()[s as usize]);
    // 6: the intervals.
    let multiplier = match f.as_slice() {
        [t] => split_on(*t, 0)
            .filter(|(rest, _)| rest.as_const() == Some(0))
            .map(|(_, k)| k),
        _ => None,
    };
    let intervals: Vec<(i64, i64)> = match multiplier {
        Some(1) | Some(-1) => vec![(0, WARP - 1)],
        Some(m) if g_is_s => {
            let b = s_bounds.unwrap_or(Interval::point(0));
            let n = b.hi - b.lo + 1;
            if n >= m.abs() {
                vec![(0, m * (WARP - 1) + n - 1)]
            } else {
                (0..WARP).map(|i| (b.lo + i * m, b.hi + i * m)).collect()
            }
        }
        Some(m) => (0..WARP).map(|i| (i * m, i * m)).collect(),
        None => {
            let xb = sample.dims[0].bounds;
            let mut idx = Vec::new();
            let mut p = vec![0i64; sample.num_vars()];
            for x in xb.lo..=xb.hi {
                p[0] = x;
                idx.push(
                    crate::expr::eval(f_expr, &p).map_err(|e| MapError::Other(e.to_string()))?,
                );
            }
            idx.sort_unstable();
            idx.dedup();
            let mut runs: Vec<(i64, i64)> = Vec::new();
            for i in idx {
                match runs.last_mut() {
                    Some((_, hi)) if *hi + 1 == i => *hi = i,
                    _ => runs.push((i, i)),
                }
            }
            if g_is_s {
                let len = s_bounds.map_or(0, |b| b.hi - b.lo);
                let mut merged: Vec<(i64, i64)> = Vec::new();
                for (lo, hi) in runs {
                    match merged.last_mut() {
                        Some((_, up)) if *up >= lo - 1 => *up = (*up).max(hi + len),
                        _ => merged.push((lo, hi + len)),
                    }
                }
                merged
            } else {
                runs
            }
        }
    };
    // 7: transactions of 128 bytes against the ideal, with XLA's 0.9.
    let ceil = |a: i64, b: i64| -> i64 { a.div_euclid(b) + i64::from(a.rem_euclid(b) != 0) };
    let mut transactions = 0i64;
    let mut total = 0i64;
    for (lo, hi) in intervals {
        let n = hi - lo + 1;
        transactions += ceil(n * elem_bytes, LINE);
        total += n;
    }
    if transactions == 0 {
        return Ok(true);
    }
    let lower = ceil(total * elem_bytes, LINE);
    Ok(lower as f64 > transactions as f64 * 0.9)
}

/// The terms of a sum, left to right.
fn sum_terms(e: Expr, out: &mut Vec<Expr>) {
    use crate::expr::{ExprKind, Op};
    match e.kind() {
        ExprKind::Bin(Op::Add, a, b) => {
            sum_terms(a, out);
            sum_terms(b, out);
        }
        _ => out.push(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::Expr;

    /// A launch's own loop is listed in full up to `OWN_VALUES` values and sampled past
    /// that (a capped grid's chunk loop had millions: the analysis took minutes), first
    /// and last values kept; a full 64-bit range neither overflows nor lists.
    #[test]
    fn long_own_loops_are_sampled() {
        let short = values(Interval::new(0, OWN_VALUES - 1), true);
        assert_eq!(short.len() as i64, OWN_VALUES);
        assert!(!sampled(Interval::new(0, OWN_VALUES - 1), true));
        let long = Interval::new(0, 4_194_304);
        let v = values(long, true);
        assert!(sampled(long, true) && v.len() as i64 <= OWN_VALUES);
        assert_eq!((v[0], v[v.len() - 1]), (0, 4_194_304));
        assert!(v.windows(2).all(|w| w[0] < w[1]));
        let all = Interval::new(i64::MIN, i64::MAX);
        let v = values(all, false);
        assert_eq!((v[0], v[v.len() - 1]), (i64::MIN, i64::MAX));
        assert!(v.len() as i64 <= FULL_VALUES);
    }
    use crate::gpu::launch::{loop_launch, transpose_launch, LaunchConfig};
    use crate::gpu::spec::{Body, ElemType, Function};
    use crate::map::IndexingMap;

    fn transpose_spec(n: i64) -> KernelSpec {
        let input = Tensor::row_major("p0", ElemType::F32, &[n, n]);
        let mut map = IndexingMap::identity(&[n, n]);
        map.results.swap(0, 1);
        KernelSpec {
            name: "t".into(),
            more_outputs: vec![],
            root: crate::gpu::spec::Root::Elementwise,
            inputs: vec![input],
            output: Tensor::row_major("out", ElemType::F32, &[n, n]),
            functions: vec![Function {
                name: "t".into(),
                dims: vec![n, n],
                body: Body::Load { input: 0, map },
            }],
            xla_tile: None,
        }
    }

    /// Thread ids (th_x in [0, 127], the others 0, bl_y in `bl_y`) → `offset`, with range
    /// variables `ranges` (named s0, ..) and runtime variables `rts` (r0, ..).
    fn offsets(offset: Expr, ranges: &[(i64, i64)], rts: &[(i64, i64)], bl_y: i64) -> IndexingMap {
        use crate::map::Variable;
        let names = ["th_x", "th_y", "th_z", "bl_x", "bl_y", "bl_z"];
        let dims = names
            .iter()
            .enumerate()
            .map(|(i, n)| match i {
                0 => Variable::new(*n, 0, 127),
                4 => Variable::new(*n, bl_y, bl_y),
                _ => Variable::new(*n, 0, 0),
            })
            .collect();
        let r = ranges
            .iter()
            .enumerate()
            .map(|(i, &(lo, hi))| Variable::new(format!("s{i}"), lo, hi))
            .collect();
        let t = rts
            .iter()
            .enumerate()
            .map(|(i, &(lo, hi))| Variable::new(format!("r{i}"), lo, hi))
            .collect();
        IndexingMap::new(dims, r, t, vec![offset], vec![])
    }

    /// XLA's verdict (`IsIndexingCoalesced`) on maps whose intervals are worked out by hand.
    #[test]
    fn xla_verdicts_follow_its_intervals() {
        let x = Expr::var(0);
        let s0 = Expr::var(6);
        let c = Expr::constant;
        let check = |m: IndexingMap, bytes: i64, want: bool| {
            assert_eq!(
                xla_indexing_coalesced(&m, bytes, false).expect("evaluates"),
                want,
                "{m}"
            );
        };
        // th_x: 32 consecutive elements, one run.
        check(offsets(x, &[], &[], 0), 4, true);
        // th_x * 2: 32 single elements, 32 transactions where 1 would do.
        check(offsets(x.mul(c(2)), &[], &[], 0), 4, false);
        // th_x * 4 + s0, s0 in [0, 3]: the threads' runs overlap, one run of 128 floats,
        // 4 transactions, the ideal.
        check(offsets(x.mul(c(4)).add(s0), &[(0, 3)], &[], 0), 4, true);
        // th_x * 4 + (th_x floordiv 16) * 1984 + s0: runs [0, 63] and [2048, 2111] (XLA's
        // own example of FindContiguousIntervals): 2 + 2 transactions, the ideal 4.
        let e = x.mul(c(4)).add(x.floordiv(c(16)).mul(c(1984))).add(s0);
        check(offsets(e, &[(0, 3)], &[], 0), 4, true);
        // th_x floordiv 2: 16 elements, each read twice: one run.
        check(offsets(x.floordiv(c(2)), &[], &[], 0), 4, true);
        // A term in both th_x and s0 cannot be split: not coalesced.
        check(offsets(x.mul(s0), &[(0, 3)], &[], 0), 4, false);
        // A runtime start at its midpoint: th_x + r0 * 64 is th_x + 320, one run.
        check(
            offsets(x.add(Expr::var(6).mul(c(64))), &[], &[(0, 10)], 0),
            4,
            true,
        );
        // Threads of reduction group 1 only: the first warp of block 0 reads nothing.
        check(offsets(x.mul(c(64)), &[], &[], 1), 4, true);
        // Bytes count: 32 elements of 8 bytes two apart take 32 × 1 transactions for
        // 4 ideal (not coalesced); one apart, 2 for 2.
        check(offsets(x.mul(c(2)), &[], &[], 0), 8, false);
        check(offsets(x, &[], &[], 0), 8, true);
    }

    #[test]
    fn a_loop_transpose_is_not_coalesced_and_the_tiled_one_is() {
        let spec = transpose_spec(256);
        let plain = analyse(
            &spec,
            &loop_launch(&spec.output, LaunchConfig::default()).expect("launch"),
        )
        .expect("ok");
        let p0 = &plain.operands[0];
        assert!(!p0.coalesced && p0.xla == Some(false));
        assert_eq!(p0.sectors, p0.loads * 32);
        assert!(plain.operands[1].coalesced);
        let tiled = analyse(
            &spec,
            &transpose_launch(&spec.output, 0, 1).expect("launch"),
        )
        .expect("ok");
        let p0 = &tiled.operands[0];
        assert!(p0.through_tile && p0.coalesced);
        assert_eq!(p0.sectors, p0.ideal_sectors);
    }

    #[test]
    fn vector_loads_of_an_elementwise_op_are_ideal() {
        let out = Tensor::row_major("out", ElemType::F32, &[20, 40, 300]);
        let spec = KernelSpec {
            name: "e".into(),
            more_outputs: vec![],
            root: crate::gpu::spec::Root::Elementwise,
            inputs: vec![out.clone()],
            output: out.clone(),
            functions: vec![Function {
                name: "e".into(),
                dims: out.dims.clone(),
                body: Body::Load {
                    input: 0,
                    map: IndexingMap::identity(&out.dims),
                },
            }],
            xla_tile: None,
        };
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
        let r = analyse(&spec, &l).expect("ok");
        // 32 threads × 4 floats = 512 bytes = 16 sectors = 4 lines per warp.
        let p0 = &r.operands[0];
        assert!(p0.coalesced && p0.xla == Some(true));
        assert_eq!(
            p0.worst.as_ref().map(|w| (w.sectors, w.ideal)),
            Some((16, 16))
        );
        assert_eq!(p0.lines, p0.ideal_lines);
    }
}
