//! Every kernel the transcripts can make: each computation and instruction defined in
//! `sessions/**/*.ixm`, as a [`KernelSpec`], with every launch mapping that applies to it.
//! The sweep in `tests/gpu_sweep.rs` emits them all for CUDA (compiled by NVRTC and ptxas)
//! and for the CPU (compiled by the host compiler with `-Wall -Werror`).
//!
//! Only the HLO statements of a transcript are replayed (commands are skipped, so the sweep
//! never benchmarks anything); after each one, every name it mentions that now resolves is
//! adapted, so a name redefined later in the file is swept in each of its meanings.

use super::from_hlo;
use super::launch::{self, Launch, LaunchConfig};
use super::spec::KernelSpec;
use crate::hlo::workspace::{Target, Workspace};
use crate::session::Session;
use crate::syntax::{self, StmtKind};
use std::collections::{BTreeMap, HashSet};

/// The kernel spec of `name` as `emit`/`bench` see it: a fusion instruction is its fused
/// computation; `None` when nothing has that name.
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
                Some(f) => from_hlo::from_computation(module, f),
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

fn words(text: &str) -> HashSet<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Replays the HLO statements of one transcript (`label` names it in origins).
pub fn sweep_transcript(label: &str, src: &str, found: &mut Found) {
    let Ok(t) = crate::transcript::Transcript::parse(src) else {
        found.refuse(label.to_string(), "the transcript does not parse");
        return;
    };
    let mut session = Session::new();
    for case in &t.cases {
        sweep_input(label, &case.input, &mut session, found);
    }
}

/// Defines the HLO of `input` in `session` (skipping commands) and adds the specs of the
/// names it mentions.
pub fn sweep_input(label: &str, input: &str, session: &mut Session, found: &mut Found) {
    for piece in syntax::split(input) {
        let Ok(stmt) = syntax::parse_statement(input, &piece) else {
            continue;
        };
        if !matches!(stmt.kind, StmtKind::Hlo(_)) {
            continue;
        }
        let outcome = session.execute_piece(input, &piece);
        if outcome.iter().any(|o| o.result.is_err()) {
            continue;
        }
        let mentioned = words(&input[piece.start..piece.end]);
        let mut names = session.hlo.names();
        names.sort();
        names.dedup();
        for name in names.iter().filter(|n| mentioned.contains(n.as_str())) {
            // A lone parameter is an input, not a kernel: nothing to emit, nothing refused.
            if matches!(session.hlo.resolve(name),
                Some(Target::Instr(c, id)) if c.instrs[id].opcode == "parameter")
            {
                continue;
            }
            match spec_for(&session.hlo, name) {
                Some(Ok(spec)) => found.add(format!("{label}:{name}"), spec),
                // A dot fusion is a GEMM (`gpu::gemm`, compiled in tests/gpu_gemm.rs).
                Some(Err(_))
                    if matches!(super::gemm::for_name(&session.hlo, name), Some(Ok(_))) => {}
                Some(Err(e)) => found.refuse(format!("{label}:{name}"), &e),
                None => {}
            }
        }
    }
}

/// Every `.ixm` transcript under `dir`, swept.
pub fn sweep_sessions(dir: &std::path::Path) -> Found {
    let mut found = Found::default();
    for f in crate::transcript::collect_files(&[dir.to_path_buf()]) {
        let Ok(src) = std::fs::read_to_string(&f) else {
            continue;
        };
        let label = f
            .strip_prefix(dir)
            .unwrap_or(&f)
            .to_string_lossy()
            .trim_end_matches(".ixm")
            .to_string();
        sweep_transcript(&label, &src, &mut found);
    }
    found
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
