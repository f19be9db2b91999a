//! `bench FUSION` as a library call: which kernels run (the tiled loop nest against the
//! untiled loop for a CPU tile, the simplified kernel against the naive one otherwise), on
//! which device, and what the mapping given means there. The result is a [`Report`] that
//! the renderers turn into lines; nothing here formats text.

use super::{Device, Options, Outcome};
use crate::gpu::mapping::Mapping;
use crate::gpu::spec::KernelSpec;
use crate::MapError;

/// What `bench` was asked for, checked by the caller (the launch exists, the tile divides).
#[derive(Clone, Debug)]
pub struct Request {
    pub mapping: Mapping,
    /// Run on the GPU (the caller resolved `device=auto`).
    pub on_gpu: bool,
    /// Only the kernels with naive index arithmetic.
    pub naive: bool,
    pub reps: usize,
    /// CPU threads for the kernels (0: every core).
    pub threads: usize,
    /// The GPU launch's options given explicitly (`block=`, `vector=`, ...), in order.
    pub launch_keys: Vec<String>,
    /// The GPU launch in words, and the rules of XLA's default launch that set what the
    /// arguments left unset (`None` for a named mapping).
    pub launch: Option<(String, Vec<String>)>,
    /// GPU: time cache-resident data (`hot`).
    pub hot: bool,
}

/// What the mapping given means on the device it ran on, said under the figures.
#[derive(Clone, Debug, PartialEq)]
pub enum Note {
    /// On the GPU a mapping's CPU tile is not used; the launch is the mapping's config.
    TileOnGpu {
        tile: Vec<i64>,
        block: i64,
        vector: i64,
        unroll: i64,
    },
    /// GPU launch options given alongside a CPU tile, which the CPU run does not use.
    LaunchKeysOnCpu(Vec<String>),
    /// The GPU launch that ran (its `mapping=` arguments), when one was given.
    Launch(String),
    /// A GPU launch given for a CPU run without a tile: the kernel is the untiled loop.
    LaunchOnCpu(String),
    /// The GPU launch that ran, in words, with the rules of XLA's default launch that chose
    /// what no argument set.
    Default { launch: String, rules: Vec<String> },
}

/// A measured `bench`: the kernels (the first is the main figure), the copy, the notes.
#[derive(Clone, Debug)]
pub struct Report {
    pub fusion: String,
    pub outcome: Outcome,
    pub notes: Vec<Note>,
    pub reps: usize,
    pub on_gpu: bool,
}

impl Report {
    /// The main variant (the first run).
    pub fn main(&self) -> Option<&super::Measured> {
        self.outcome.variants.first()
    }

    /// Every variant's output matched the reference.
    pub fn verified(&self) -> bool {
        self.outcome.variants.iter().all(|v| v.verified)
    }
}

/// Runs the kernels `req` names for `spec` and measures them against a copy.
pub fn measure(spec: &KernelSpec, req: &Request) -> Result<Report, MapError> {
    let m = &req.mapping;
    let mut notes = Vec::new();
    if req.on_gpu {
        if let Some(t) = &m.tile {
            notes.push(Note::TileOnGpu {
                tile: t.clone(),
                block: m.config.block,
                vector: m.config.vector,
                unroll: m.config.unroll,
            });
        }
    } else if !req.launch_keys.is_empty() && m.tile.is_some() {
        // Without a tile, the `LaunchOnCpu` note says the launch does not apply.
        notes.push(Note::LaunchKeysOnCpu(req.launch_keys.clone()));
    }
    let opts = Options {
        device: if req.on_gpu { Device::Gpu } else { Device::Cpu },
        reps: req.reps,
        warmups: 2,
        progress: true,
        config: m.config,
        tiled: m.tiled,
        threads: req.threads,
        hot: req.hot,
    };
    let outcome = match (&m.tile, req.on_gpu) {
        // The tiled loop nest against the untiled loop, measured in the same run.
        (Some(tile), false) => {
            let kernels = super::cpu::tiled_variants(spec, tile, req.naive)?;
            super::cpu::run_kernels(spec, &opts, kernels)?
        }
        _ => super::run(spec, &opts, !req.naive, req.naive)?,
    };
    let launch_given = match &req.launch {
        // XLA's default filled in what was not given: only explicit keys count.
        Some(_) => !req.launch_keys.is_empty(),
        // A named mapping (`tune`'s best has an origin) is said even when it is the plain one.
        None => m.config != Mapping::default().config || m.tiled.is_some() || m.origin.is_some(),
    };
    if req.on_gpu && launch_given {
        notes.push(Note::Launch(m.args()));
    } else if !req.on_gpu && m.tile.is_none() && launch_given {
        notes.push(Note::LaunchOnCpu(m.args()));
    }
    if req.on_gpu {
        if let Some((launch, rules)) = &req.launch {
            notes.push(Note::Default {
                launch: launch.clone(),
                rules: rules.clone(),
            });
        }
    }
    Ok(Report {
        fusion: spec.name.clone(),
        outcome,
        notes,
        reps: req.reps,
        on_gpu: req.on_gpu,
    })
}
