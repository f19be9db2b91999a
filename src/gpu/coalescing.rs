//! Coalescing: do the threads of a warp read neighbouring bytes?
//!
//! For each operand we compose three maps, as XLA's coalescing analysis does:
//! thread ids → output (the launch), output → operand (the fusion), and the operand's
//! logical → linearized physical layout. The result gives the element offset every thread
//! reads. For each warp and each load instruction (one value of the loop variables; the
//! elements of a vector belong to one load) we collect the addresses of the active threads
//! and count the distinct 32-byte sectors and 128-byte lines they touch, against the ideal:
//! the same bytes packed densely.
//!
//! ```text
//! transpose f32[2048,2048]{1,0} -> {1,0}, loop mapping:   32 sectors per warp, ideal 4
//! the same with 32×32 shared-memory tiles:                  4 sectors per warp, ideal 4
//! ```
//!
//! A load is *efficient* when it touches at most one sector more than the ideal (a warp's
//! bytes that straddle a sector boundary); an operand is coalesced when every load checked
//! is efficient. Large launches are sampled: the first blocks, the last block (the ragged
//! edge) and blocks spread evenly between.

use super::launch::{accesses, reads_through_tile, thread_to_input, Launch, WARP};
use super::spec::{KernelSpec, Tensor};
use crate::map::{compose, IndexingMap};
use crate::simplify::{simplify, SimplifyLimits};
use crate::MapError;

pub const SECTOR: i64 = 32;
pub const LINE: i64 = 128;

/// Most address evaluations one analysis does before it samples.
const BUDGET: u64 = 1 << 20;

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

/// The verdict for one operand (or the output).
#[derive(Clone, Debug, PartialEq)]
pub struct OperandReport {
    pub label: String,
    /// Which input this is (`Some(K)` for operand K), or `None` for the output's write.
    pub operand: Option<usize>,
    pub tensor: Tensor,
    /// Thread ids → element offset in memory.
    pub offsets: IndexingMap,
    pub through_tile: bool,
    pub loads: u64,
    pub sectors: u64,
    pub ideal_sectors: u64,
    pub lines: u64,
    pub ideal_lines: u64,
    pub coalesced: bool,
    pub worst: Option<WarpLoad>,
    /// XLA's rule of thumb: offsets move by 0 or 1 element per step of th_x.
    pub rule_coalesced: bool,
    pub th_x_stride: Option<i64>,
}

#[derive(Clone, Debug)]
pub struct Report {
    pub blocks_checked: i64,
    pub warps_checked: i64,
    pub sampled: bool,
    pub operands: Vec<OperandReport>,
}

/// Analyses every input access and the output write of `launch`.
pub fn analyse(spec: &KernelSpec, launch: &Launch) -> Result<Report, MapError> {
    if !launch.parts.is_empty() || !spec.more_outputs.is_empty() {
        return Err(MapError::Other(format!(
            "coalescing is analysed for one loop writing one output; {} runs {} ({} output(s))",
            spec.name,
            launch.strategy.name(),
            spec.outputs().len()
        )));
    }
    let accs = accesses(spec, launch)?;
    let blocks = pick_blocks(launch, accs.len() + 1);
    let mut operands = Vec::new();
    for acc in &accs {
        let t = spec
            .inputs
            .get(acc.input)
            .ok_or_else(|| MapError::Other("no such input".into()))?;
        let to_input = thread_to_input(spec, launch, acc)?;
        let label = if accs.iter().filter(|a| a.input == acc.input).count() > 1 {
            let k = accs
                .iter()
                .filter(|a| a.input == acc.input)
                .position(|a| a == acc)
                .unwrap_or(0);
            format!("{} #{}", t.name, k + 1)
        } else {
            t.name.clone()
        };
        let mut one = analyse_one(
            label,
            t,
            &to_input,
            reads_through_tile(spec, launch, acc),
            launch,
            &blocks,
        )?;
        one.operand = Some(acc.input);
        operands.push(one);
    }
    operands.push(analyse_one(
        format!("{} (write)", spec.output.name),
        &spec.output,
        &launch.write_map,
        false,
        launch,
        &blocks,
    )?);
    let nwarps = (launch.block[0] + WARP - 1) / WARP;
    Ok(Report {
        blocks_checked: blocks.len() as i64,
        warps_checked: blocks.len() as i64 * nwarps,
        sampled: (blocks.len() as i64) < launch.grid[0],
        operands,
    })
}

fn pick_blocks(launch: &Launch, n_maps: usize) -> Vec<i64> {
    let grid = launch.grid[0];
    let per_block = launch
        .read_map
        .ranges
        .iter()
        .fold(launch.block[0] as u64, |acc, v| {
            acc.saturating_mul(v.bounds.size().unwrap_or(u64::MAX))
        });
    let affordable = (BUDGET / per_block.max(1) / n_maps.max(1) as u64).max(3) as i64;
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

fn analyse_one(
    label: String,
    t: &Tensor,
    to_logical: &IndexingMap,
    through_tile: bool,
    launch: &Launch,
    blocks: &[i64],
) -> Result<OperandReport, MapError> {
    let offsets = simplify(
        &compose(to_logical, &t.layout_map()?)?,
        &SimplifyLimits::default(),
    )
    .map;
    let bytes = t.elem.bytes();
    let nd = offsets.dims.len();
    let syms: Vec<usize> = (nd..offsets.num_vars()).collect();
    let vec_var = offsets
        .ranges
        .iter()
        .position(|v| v.name == "unroll_id")
        .map(|i| nd + i);
    let load_vars: Vec<usize> = syms
        .iter()
        .copied()
        .filter(|&s| Some(s) != vec_var)
        .collect();
    let bounds = offsets.bounds();
    let nwarps = (launch.block[0] + WARP - 1) / WARP;
    let mut rep = OperandReport {
        label,
        operand: None,
        tensor: t.clone(),
        offsets: offsets.clone(),
        through_tile,
        loads: 0,
        sectors: 0,
        ideal_sectors: 0,
        lines: 0,
        ideal_lines: 0,
        coalesced: true,
        worst: None,
        rule_coalesced: true,
        th_x_stride: None,
    };
    let mut point = vec![0i64; offsets.num_vars()];
    let mut addrs: Vec<i64> = Vec::with_capacity(64);
    for &b in blocks {
        for w in 0..nwarps {
            // Every value of the loop variables is one load.
            let mut loads = vec![0i64; load_vars.len()];
            for (k, &v) in load_vars.iter().enumerate() {
                loads[k] = bounds[v].lo;
            }
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
                    point.iter_mut().for_each(|p| *p = 0);
                    point[0] = th;
                    point[3] = b;
                    for (k, &v) in load_vars.iter().enumerate() {
                        point[v] = loads[k];
                    }
                    let (lo, hi) = vec_var.map_or((0, 0), |v| (bounds[v].lo, bounds[v].hi));
                    for e in lo..=hi {
                        if let Some(v) = vec_var {
                            point[v] = e;
                        }
                        if let Some(r) = offsets.eval_point(&point)? {
                            addrs.push(
                                r[0].checked_mul(bytes)
                                    .ok_or_else(|| MapError::Overflow("an address".into()))?,
                            );
                        }
                    }
                }
                if !addrs.is_empty() {
                    addrs.sort_unstable();
                    addrs.dedup();
                    let elements = addrs.len() as i64;
                    let sectors = distinct(&addrs, SECTOR);
                    let lines = distinct(&addrs, LINE);
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
                        let at = load_vars
                            .iter()
                            .zip(&loads)
                            .map(|(&v, x)| format!("{}={x}", offsets.var(v).name))
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
                // Next load: odometer over the loop variables.
                let mut i = load_vars.len();
                let mut done = true;
                while i > 0 {
                    i -= 1;
                    if loads[i] < bounds[load_vars[i]].hi {
                        loads[i] += 1;
                        done = false;
                        break;
                    }
                    loads[i] = bounds[load_vars[i]].lo;
                }
                if done {
                    break;
                }
            }
        }
    }
    // The rule of thumb: how far the offset moves when th_x moves by one, at the origin.
    let mut p0 = vec![0i64; offsets.num_vars()];
    for &s in &syms {
        p0[s] = bounds[s].lo;
    }
    let mut p1 = p0.clone();
    p1[0] = 1;
    if let (Ok(Some(a)), Ok(Some(b))) = (offsets.eval_point(&p0), offsets.eval_point(&p1)) {
        let per_thread = vec_var.map_or(1, |v| bounds[v].hi - bounds[v].lo + 1);
        let stride = b[0] - a[0];
        rep.th_x_stride = Some(stride);
        rep.rule_coalesced = stride == 0 || stride == per_thread;
    }
    Ok(rep)
}

fn distinct(sorted_addrs: &[i64], unit: i64) -> i64 {
    let mut n = 0;
    let mut last = None;
    for &a in sorted_addrs {
        let u = a.div_euclid(unit);
        if last != Some(u) {
            n += 1;
            last = Some(u);
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
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
        }
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
        assert!(!p0.coalesced && !p0.rule_coalesced);
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
        assert!(p0.coalesced && p0.rule_coalesced);
        assert_eq!(
            p0.worst.as_ref().map(|w| (w.sectors, w.ideal)),
            Some((16, 16))
        );
        assert_eq!(p0.lines, p0.ideal_lines);
    }
}
