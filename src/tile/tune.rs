//! Tuning a mapping by benchmark: enumerate the tilings of a fusion's output that are valid
//! (every input access's tile is a tile, the sizes divide the extents, every tile reads
//! contiguous runs of at least a cache line), emit each as a tiled loop nest, run it through
//! the verified CPU bench of `gpu::bench` (every output element checked against the
//! reference, before and after timing), time them interleaved round by round with the
//! default, rank by time, and re-measure the winner against the default at the end.
//!
//! The candidates come from [`candidates`]: the seam where the enumeration of tilings
//! plugs in; everything after it only needs sizes and their shortest run.
//!
//! ```text
//! transpose f32[2048, 2048]:  default (rows of the output)     9.1 ms
//!                              tile (32, 32)                    2.3 ms   3.9x
//! ```
//!
//! The tiles come from [`super::derive`]: the same symbolic tiles `tile` prints decide which
//! sizes are legal and how long each operand's contiguous runs are.

use super::derive;
use crate::gpu::bench::cpu::{compile, cpu_name, set_threads};
use crate::gpu::bench::{interleave, reference_output, verify, Options, Ratio, Timing};

use crate::gpu::reference::make_inputs;
use crate::gpu::spec::{KernelSpec, Tensor};

use crate::MapError;

/// Bytes in a cache line: a tile whose runs are shorter wastes the lines it touches.
pub const LINE: i64 = 64;

/// One tiling of the output: a tile size per output dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub sizes: Vec<i64>,
    /// The shortest contiguous run (bytes) any operand's tile (or the output's) reads.
    pub min_run: i64,
}

/// A candidate left out, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    pub sizes: Vec<i64>,
    pub why: String,
}

/// The contiguous run, in bytes, of a tile of `t` with these sizes and strides: the size
/// along the minor physical dimension when its stride is 1 (times the next dimensions'
/// sizes while the tile covers the minor ones whole).
fn run_bytes(t: &Tensor, sizes: &[i64], strides: &[i64]) -> i64 {
    let mut run = 1i64;
    for &d in &t.minor_to_major {
        let (Some(&z), Some(&s)) = (sizes.get(d), strides.get(d)) else {
            break;
        };
        if t.dims[d] == 1 {
            continue;
        }
        if s != 1 || z == 1 {
            break;
        }
        run = run.saturating_mul(z);
        if z != t.dims[d] {
            break;
        }
    }
    run.saturating_mul(t.elem.bytes())
}

/// The CPU kernel's rules for tile sizes: they divide the extents (its loops have no
/// masks); without `user_tiles`, powers of two up to 512 or the whole extent.
pub fn rules(user_tiles: Option<&[i64]>) -> super::space::Rules {
    super::space::Rules {
        power_of_two: user_tiles.is_none(),
        divide: true,
        max_volume: None,
        max_size: Some(512),
        only: user_tiles.map(|u| u.to_vec()),
    }
}

/// Every valid tiling, and those left out with the reason; at most `max` kept (evenly
/// spread over the valid ones, whose number is the third value).
pub fn candidates(
    spec: &KernelSpec,
    user_tiles: Option<&[i64]>,
    max: usize,
) -> Result<(Vec<Candidate>, Vec<Rejected>, usize), MapError> {
    let dims = &spec.output.dims;
    let accesses = spec.input_accesses()?;
    // The candidates: the valid tilings of `tile::space` under the CPU emitter's rules
    // (sizes dividing the extents, powers of two up to 512 or the whole extent).
    let targets: Vec<(String, Vec<crate::map::IndexingMap>)> = accesses
        .iter()
        .map(|a| (format!("input {}", a.input), vec![a.map.clone()]))
        .collect();
    let rules = rules(user_tiles);
    let space = super::space::enumerate(&targets, dims, &rules, 100_000)
        .map_err(|e| MapError::Other(format!("{e} with tile=(...)")))?;
    let mut good = Vec::new();
    let mut rejected: Vec<Rejected> = space
        .rejected
        .into_iter()
        .map(|(sizes, why)| Rejected { sizes, why })
        .collect();
    'cand: for sizes in space.valid {
        // The untiled loop is the default mapping, measured separately.
        if sizes.iter().zip(dims).all(|(z, n)| z == n) || sizes.iter().all(|&z| z == 1) {
            continue;
        }
        let mut min_run = run_bytes(&spec.output, &sizes, &vec![1; sizes.len()]);
        let want = |t: &Tensor| {
            LINE.min(
                t.elem
                    .bytes()
                    .saturating_mul(t.minor_dim().map_or(1, |d| t.dims[d])),
            )
        };
        if min_run < want(&spec.output) {
            rejected.push(Rejected {
                sizes,
                why: format!("output runs of {min_run} bytes, under a {LINE}-byte line"),
            });
            continue;
        }
        for acc in &accesses {
            let t = &spec.inputs[acc.input];
            match derive(&acc.map, &sizes) {
                Err(e) => {
                    rejected.push(Rejected {
                        sizes,
                        why: format!("input {}: {e}", acc.input),
                    });
                    continue 'cand;
                }
                Ok(tile) => {
                    // A sum with gaps reads its box in stretches (the masks' runs).
                    let r = run_bytes(t, &tile.runs(), &tile.strides);
                    if r < want(t) {
                        rejected.push(Rejected {
                            sizes,
                            why: format!(
                                "input {} runs of {r} bytes, under a {LINE}-byte line",
                                acc.input
                            ),
                        });
                        continue 'cand;
                    }
                    min_run = min_run.min(r);
                }
            }
        }
        good.push(Candidate { sizes, min_run });
    }
    let valid = good.len();
    if good.len() > max && max > 0 {
        let step = good.len() as f64 / max as f64;
        good = (0..max)
            .map(|i| good[(i as f64 * step) as usize].clone())
            .collect();
    }
    Ok((good, rejected, valid))
}

// The tiled loop nest's C lives with the CPU emitter (`gpu::emit::cpu`), below the bench
// that runs it and this module that tunes it: emit → bench → tune, one direction.
pub use crate::gpu::emit::cpu::{emit_tiled, emit_tiled_with};

/// One measured mapping.
#[derive(Clone, Debug)]
pub struct Measured {
    /// `None` for the default mapping (the untiled loop).
    pub sizes: Option<Vec<i64>>,
    pub timing: Timing,
    pub min_run: Option<i64>,
    /// Against the default, from the same rounds (`None` for the default itself).
    pub vs_default: Option<Ratio>,
}

/// The fastest candidate measured once more against the default, in rounds of its own.
#[derive(Clone, Debug)]
pub struct Recheck {
    pub sizes: Vec<i64>,
    pub ratio: Ratio,
}

/// The result of a tuning run.
#[derive(Clone, Debug)]
pub struct Tuned {
    pub device: String,
    pub bytes: u64,
    pub copy: Timing,
    /// The default mapping first, then every candidate, as measured (unsorted).
    pub rows: Vec<Measured>,
    pub rejected: Vec<Rejected>,
    /// The best candidate re-measured against the default at the end of the run.
    pub recheck: Option<Recheck>,
}

impl Tuned {
    pub fn gbps(&self, t: &Timing) -> f64 {
        self.bytes as f64 / t.median_s / 1e9
    }
    pub fn copy_pct(&self, t: &Timing) -> f64 {
        100.0 * self.copy.median_s / t.median_s
    }
    /// The fastest candidate (never the default), if any.
    pub fn best(&self) -> Option<&Measured> {
        self.rows
            .iter()
            .filter(|m| m.sizes.is_some())
            .min_by(|a, b| a.timing.median_s.total_cmp(&b.timing.median_s))
    }
}

/// Rounds of the final re-measurement of the winner against the default.
pub fn recheck_rounds(reps: usize) -> usize {
    reps.max(10)
}

/// Benchmarks the default mapping and every candidate on the CPU, interleaved round by
/// round (with a copy of the same bytes), each verified against the reference before and
/// after timing; then the fastest candidate against the default once more, in
/// [`recheck_rounds`] rounds of their own, so the reported win is one measured twice.
/// `progress(i, n, label)` is called as work proceeds.
pub fn tune(
    spec: &KernelSpec,
    cands: &[Candidate],
    rejected: Vec<Rejected>,
    opts: &Options,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<Tuned, MapError> {
    spec.single_output("tune")?;
    let inputs = make_inputs(spec)?;
    let want = reference_output(spec, &inputs)?;
    let out_bytes = spec.output.num_bytes()? as usize;
    let bytes = spec.bytes_moved()? as u64;
    let total = cands.len() + 3;
    progress(0, total, "default");
    let mut kernels = vec![(compile_default(spec)?, None, None)];
    for (i, c) in cands.iter().enumerate() {
        progress(i + 1, total, &format!("compile {}", label(&c.sizes)));
        let e = emit_tiled(spec, &c.sizes)?;
        kernels.push((
            compile(&e.source, &e.entry)?,
            Some(c.sizes.clone()),
            Some(c.min_run),
        ));
    }
    let threads = set_threads(opts.threads);
    // One output buffer, shared: each kernel is verified on it before the rounds and, run
    // once more, after them.
    let mut out = vec![0u8; out_bytes];
    for (k, _, _) in &kernels {
        out.fill(0);
        k.call(&inputs, &mut out);
        verify(spec, &out, &want)?;
    }
    let half = (bytes / 2).max(1) as usize;
    let src = vec![1u8; half];
    let mut dst = vec![0u8; half];
    progress(cands.len() + 1, total, "interleaved rounds");
    let timings = {
        let out = std::cell::RefCell::new(&mut out);
        let mut fns: Vec<Box<dyn FnMut() + '_>> = kernels
            .iter()
            .map(|(k, _, _)| {
                let (inputs, out) = (&inputs, &out);
                Box::new(move || k.call(inputs, &mut out.borrow_mut()[..])) as Box<dyn FnMut()>
            })
            .collect();
        fns.push(Box::new(|| {
            dst.copy_from_slice(&src);
            std::hint::black_box(&mut dst);
        }));
        let mut refs: Vec<&mut dyn FnMut()> = fns
            .iter_mut()
            .map(|f| &mut **f as &mut dyn FnMut())
            .collect();
        interleave(opts, &mut refs, &mut |_, _| {})?
    };
    for (k, _, _) in &kernels {
        out.fill(0);
        k.call(&inputs, &mut out);
        verify(spec, &out, &want)?;
    }
    let default_samples = timings[0].samples.clone();
    let rows: Vec<Measured> = kernels
        .iter()
        .zip(&timings)
        .enumerate()
        .map(|(i, ((_, sizes, min_run), t))| Measured {
            sizes: sizes.clone(),
            timing: t.clone(),
            min_run: *min_run,
            vs_default: (i > 0)
                .then(|| Ratio::paired(&default_samples, &t.samples))
                .flatten(),
        })
        .collect();
    let copy = timings
        .last()
        .cloned()
        .ok_or_else(|| MapError::Other("nothing was timed".into()))?;
    // The winner against the default, again, in rounds of their own.
    let best = (1..rows.len())
        .min_by(|&a, &b| rows[a].timing.median_s.total_cmp(&rows[b].timing.median_s));
    let recheck = match best {
        Some(b) => {
            progress(cands.len() + 2, total, "re-measure the best");
            let again = Options {
                reps: recheck_rounds(opts.reps),
                ..opts.clone()
            };
            let mut out_a = vec![0u8; out_bytes];
            let mut out_b = vec![0u8; out_bytes];
            let (kd, kb) = (&kernels[0].0, &kernels[b].0);
            let t = {
                let mut fd = || kd.call(&inputs, &mut out_a);
                let mut fb = || kb.call(&inputs, &mut out_b);
                interleave(&again, &mut [&mut fd, &mut fb], &mut |_, _| {})?
            };
            verify(spec, &out_a, &want)?;
            verify(spec, &out_b, &want)?;
            Ratio::paired(&t[0].samples, &t[1].samples).map(|ratio| Recheck {
                sizes: rows[b].sizes.clone().unwrap_or_default(),
                ratio,
            })
        }
        None => None,
    };
    progress(total, total, "done");
    Ok(Tuned {
        device: format!(
            "cpu ({}, {threads} thread{})",
            cpu_name(),
            if threads == 1 { "" } else { "s" }
        ),
        bytes,
        copy,
        rows,
        rejected,
        recheck,
    })
}

fn label(sizes: &[i64]) -> String {
    sizes
        .iter()
        .map(|z| z.to_string())
        .collect::<Vec<_>>()
        .join("x")
}

fn compile_default(spec: &KernelSpec) -> Result<crate::gpu::bench::cpu::Compiled, MapError> {
    let e = crate::gpu::emit::cpu::emit(spec, false)?;
    compile(&e.source, &e.entry)
}

/// A GPU launch to try: block and vector sizes, with the coalescing verdict of every operand.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchCandidate {
    pub config: crate::gpu::launch::LaunchConfig,
    /// Operands (and the output) whose warps' loads are coalesced, of all.
    pub coalesced: (usize, usize),
}

/// The default launch `tune` starts from and compares with: XLA's
/// ([`crate::gpu::launch::xla_default`], for an H100), the search going beyond it.
pub fn default_launch_config(spec: &KernelSpec) -> crate::gpu::launch::LaunchConfig {
    use crate::gpu::launch::{xla_default, DeviceLimits};
    xla_default(spec, None, DeviceLimits::H100)
        .map(|d| d.config)
        .unwrap_or_default()
}

/// The launches of `spec` for every block and vector size given that the GPU code accepts,
/// keeping those whose coalescing is no worse than the default launch's.
pub fn launch_candidates(
    spec: &KernelSpec,
    blocks: &[i64],
    vectors: &[i64],
) -> Result<(Vec<LaunchCandidate>, Vec<(String, String)>), MapError> {
    use crate::gpu::coalescing::analyse;
    use crate::gpu::launch::{choose, LaunchConfig};
    let verdict = |cfg: LaunchConfig| -> Result<(usize, usize), MapError> {
        let l = choose(spec, cfg, None)?;
        let r = analyse(spec, &l)?;
        Ok((
            r.operands.iter().filter(|o| o.coalesced).count(),
            r.operands.len(),
        ))
    };
    let default = default_launch_config(spec);
    let base = verdict(default)?;
    let mut good = Vec::new();
    let mut rejected = Vec::new();
    for &block in blocks {
        for &vector in vectors {
            let config = LaunchConfig {
                block,
                vector,
                unroll: 1,
                ..Default::default()
            };
            let label = format!("block={block} vector={vector}");
            if config == default {
                continue;
            }
            match verdict(config) {
                Err(e) => rejected.push((label, e.to_string())),
                Ok(c) if c.0 < base.0 => rejected.push((
                    label,
                    format!(
                        "{} of {} operands coalesced, fewer than the default's {}",
                        c.0, c.1, base.0
                    ),
                )),
                Ok(c) => good.push(LaunchCandidate {
                    config,
                    coalesced: c,
                }),
            }
        }
    }
    Ok((good, rejected))
}

/// One measured GPU launch (`None`: the default launch).
#[derive(Clone, Debug)]
pub struct MeasuredLaunch {
    pub config: Option<crate::gpu::launch::LaunchConfig>,
    pub timing: Timing,
    pub coalesced: (usize, usize),
}

/// Benchmarks the default launch and every candidate on the GPU through `gpu::bench` (which
/// verifies every output element); returns the device name, bytes, copy timing and rows.
pub fn tune_launches(
    spec: &KernelSpec,
    cands: &[LaunchCandidate],
    opts: &Options,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<(String, u64, Timing, Vec<MeasuredLaunch>), MapError> {
    use crate::gpu::bench::{run, Device};
    let total = cands.len() + 1;
    let mut rows = Vec::new();
    let mut last = None;
    let default = [LaunchCandidate {
        config: default_launch_config(spec),
        coalesced: (0, 0),
    }];
    for (i, c) in default.iter().chain(cands).enumerate() {
        progress(
            i,
            total,
            &format!("block={} vector={}", c.config.block, c.config.vector),
        );
        let o = Options {
            device: Device::Gpu,
            config: c.config,
            ..opts.clone()
        };
        let out = run(spec, &o, false, false)?;
        let m = out
            .variants
            .first()
            .ok_or_else(|| MapError::Other("the bench returned no timing".into()))?;
        if !m.verified {
            return Err(MapError::Other(
                "a kernel did not verify, so it has no timing".into(),
            ));
        }
        let coalesced = if i == 0 {
            let l = crate::gpu::launch::choose(spec, c.config, None)?;
            let r = crate::gpu::coalescing::analyse(spec, &l)?;
            (
                r.operands.iter().filter(|o| o.coalesced).count(),
                r.operands.len(),
            )
        } else {
            c.coalesced
        };
        rows.push(MeasuredLaunch {
            config: (i > 0).then_some(c.config),
            timing: m.timing.clone(),
            coalesced,
        });
        last = Some((out.device.clone(), out.bytes, out.copy.clone()));
    }
    progress(total, total, "done");
    let (device, bytes, copy) =
        last.ok_or_else(|| MapError::Other("nothing was measured".into()))?;
    Ok((device, bytes, copy, rows))
}

/// `tune` on the GPU: the launches measured (the default first) and how many candidates
/// the coalescing filter left out.
#[derive(Clone, Debug)]
pub struct TunedLaunches {
    pub device: String,
    pub bytes: u64,
    pub copy: Timing,
    pub rows: Vec<MeasuredLaunch>,
    /// Candidates measured (besides the default) and candidates filtered out.
    pub tried: usize,
    pub rejected: usize,
}

impl TunedLaunches {
    /// The rows' indices, fastest (lowest median) first.
    pub fn order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.rows.len()).collect();
        order.sort_by(|&x, &y| {
            self.rows[x]
                .timing
                .median_s
                .total_cmp(&self.rows[y].timing.median_s)
        });
        order
    }

    /// The default launch's median time.
    pub fn default_s(&self) -> f64 {
        self.rows.first().map_or(0.0, |r| r.timing.median_s)
    }

    /// The fastest launch other than the default, its speed-up over the default, and
    /// whether the default itself ranked first.
    pub fn best(&self) -> Option<(crate::gpu::launch::LaunchConfig, f64, bool)> {
        let order = self.order();
        let &i = order.iter().find(|&&i| self.rows[i].config.is_some())?;
        let c = self.rows[i].config?;
        let default_first = order
            .first()
            .is_some_and(|&j| self.rows[j].config.is_none());
        Some((
            c,
            self.default_s() / self.rows[i].timing.median_s,
            default_first,
        ))
    }
}
