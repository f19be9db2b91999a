//! Every kernel the transcripts can make: each computation and instruction defined in
//! `sessions/**/*.ixm`, as a [`KernelSpec`], with every launch mapping that applies to it.
//! The sweep in `tests/gpu_sweep.rs` emits them all for CUDA (compiled by NVRTC and ptxas)
//! and for the CPU (compiled by the host compiler with `-Wall -Werror`).
//!
//! The replay of the transcripts themselves (which needs the interpreter, above this
//! module) is in `tests/gpu_sweep.rs`; here are the pieces below it: a name's spec, the
//! launches that apply, and the bookkeeping of what was found and refused.

use super::from_hlo;
use super::launch::{self, Launch, LaunchConfig};
use super::spec::KernelSpec;
use crate::hlo::workspace::{Target, Workspace};
use std::collections::{BTreeMap, HashSet};

/// The kernel spec of `name` as `emit`/`bench` see it: a fusion instruction is its fused
/// computation (with the tiling its `backend_config` prints, [`super::spec::XlaTile`]);
/// `None` when nothing has that name.
pub fn spec_for(ws: &Workspace, name: &str) -> Option<Result<KernelSpec, String>> {
    let module = &ws.module;
    Some(match ws.resolve(name)? {
        Target::Computation(c) => from_hlo::from_computation(module, c),
        Target::Instr(c, id) => {
            let ins = &c.instrs[id];
            match ins
                .attrs
                .calls
                .as_deref()
                .filter(|_| ins.opcode == "fusion")
                .and_then(|n| module.computation(n))
            {
                // A fusion instruction: its computation, with XLA's tiling where its
                // backend_config prints one (a Triton fusion's warps and output tile).
                Some(f) => from_hlo::from_computation(module, f).map(|mut s| {
                    s.xla_tile = super::spec::XlaTile::of(ins);
                    s
                }),
                None => from_hlo::from_instr(module, c, id),
            }
        }
    })
}

/// Specs found, and the names that could not be adapted, by reason.
#[derive(Default)]
pub struct Found {
    /// (`file:name`, spec), each distinct spec once.
    pub specs: Vec<(String, KernelSpec)>,
    /// Reason → the `file:name`s refused for it.
    pub refused: BTreeMap<String, Vec<String>>,
    seen: HashSet<String>,
}

impl Found {
    pub fn add(&mut self, origin: String, spec: KernelSpec) {
        if self.seen.insert(format!("{spec:?}")) {
            self.specs.push((origin, spec));
        }
    }
    pub fn refuse(&mut self, origin: String, why: &str) {
        let v = self.refused.entry(reason(why)).or_default();
        if !v.contains(&origin) {
            v.push(origin);
        }
    }
}

/// A refusal's reason without the names and sizes that make each message unique, so equal
/// reasons group: digits and backquoted names are blanked.
pub fn reason(msg: &str) -> String {
    let first = msg.lines().next().unwrap_or("");
    let mut out = String::new();
    let mut in_tick = false;
    for ch in first.chars() {
        match ch {
            '`' => {
                in_tick = !in_tick;
                out.push_str(if in_tick { "`_" } else { "`" });
            }
            _ if in_tick => {}
            c if c.is_ascii_digit() => {
                if !out.ends_with('N') {
                    out.push('N')
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Every launch mapping that applies to `spec`, labelled with the `emit` arguments that
/// give it: the strategy XLA picks (a reduction, or a tiled transpose), the plain loop, and
/// the loop with its per-thread loops both present (`vector=` 4 or 2 when one divides the
/// minor dimension, `unroll=2`, a small block).
pub fn launches(spec: &KernelSpec) -> Vec<(String, Result<Launch, String>)> {
    let base = LaunchConfig::default();
    let mut out = Vec::new();
    let mut push = |label: String, l: Result<Launch, crate::MapError>| {
        out.push((label, l.map_err(|e| e.to_string())))
    };
    // XLA's default launch (what `emit` and `bench` run without options), when it differs
    // from the plain configuration below.
    if let Ok(d) = launch::xla_default(spec, None, launch::DeviceLimits::H100) {
        if d.config != base {
            push(
                format!("block={} vector={}", d.config.block, d.config.vector),
                launch::choose(spec, d.config, None),
            );
        }
    }
    if spec.root_reduction().is_some() {
        push(String::new(), launch::choose(spec, base, None));
        return out;
    }
    if spec.root != super::spec::Root::Elementwise {
        // A loop per part (concatenate) or over the update (dynamic-update-slice): XLA's
        // launch, and one with vectors, two chunks per thread and a small block.
        push(String::new(), launch::choose(spec, base, None));
        for v in [4, 2] {
            let cfg = LaunchConfig {
                vector: v,
                unroll: 2,
                block: 32,
                ..Default::default()
            };
            if let Ok(l) = launch::choose(spec, cfg, None) {
                push(format!("vector={v} unroll=2 block=32"), Ok(l));
                break;
            }
        }
        return out;
    }
    if matches!(launch::transpose_dims(spec), Ok(Some(_))) {
        push("tiled=true".into(), launch::choose(spec, base, Some(true)));
    }
    push(
        "tiled=false".into(),
        launch::loop_launch(&spec.output, base),
    );
    let minor = spec
        .output
        .minor_dim()
        .map(|d| spec.output.dims[d])
        .unwrap_or(1);
    let v = [4, 2, 1].into_iter().find(|v| minor % v == 0).unwrap_or(1);
    let cfg = LaunchConfig {
        vector: v,
        unroll: 2,
        block: 32,
        ..Default::default()
    };
    push(
        format!("tiled=false vector={v} unroll=2 block=32"),
        launch::loop_launch(&spec.output, cfg),
    );
    out
}
