//! GPU commands: `threads`, `coalescing`, `emit`, `bench` (issue 5). Each takes a fusion —
//! a fused computation, a `fusion` instruction, or any single instruction — and a launch
//! configuration, and returns a typed value for the front ends to render.

use super::commands::Command;
use super::{Args, Indexing, OperandMaps, Session, Table, Value};
use crate::gpu::bench::{self, Device, Options};
use crate::gpu::coalescing;
use crate::gpu::emit::{self, Target};
use crate::gpu::from_hlo;
use crate::gpu::launch::{self, thread_to_input, Launch, LaunchConfig, Strategy};
use crate::gpu::spec::KernelSpec;
use crate::hlo::workspace::Target as HloTarget;
use crate::syntax::{suggest, Arg, Diagnostic, Span};

pub static COMMANDS: [Command; 4] = [
    Command {
        name: "threads",
        usage: "threads FUSION [block=N] [vector=N] [unroll=N] [tiled=true|false]",
        summary: "the thread/block-id → output map of a launch, and thread-id → every input",
        example: "p0 = f32[20, 40, 300] parameter(0); p1 = f32[20, 40, 300] parameter(1); add0 = f32[20, 40, 300] add(p0, p1); threads add0 block=128 vector=4",
        run: threads,
    },
    Command {
        name: "coalescing",
        usage: "coalescing FUSION [block=N] [vector=N] [unroll=N] [tiled=true|false]",
        summary: "per operand: sectors and lines per warp load against the ideal, the worst warp, and a verdict",
        example: "p0 = f32[20, 40, 300] parameter(0); p1 = f32[20, 40, 300] parameter(1); add0 = f32[20, 40, 300] add(p0, p1); coalescing add0 vector=4",
        run: coalescing_cmd,
    },
    Command {
        name: "emit",
        usage: "emit FUSION [block=N] [vector=N] [unroll=N] [tiled=true|false] [target=cuda|cpu] [naive]",
        summary: "the kernel source for that mapping: CUDA C, or C for the host compiler",
        example: "p0 = f32[20, 40, 300] parameter(0); p1 = f32[20, 40, 300] parameter(1); add0 = f32[20, 40, 300] add(p0, p1); emit add0 target=cpu",
        run: emit_cmd,
    },
    Command {
        name: "bench",
        usage: "bench FUSION [device=auto|gpu|cpu] [naive] [reps=N] [block=N] [vector=N] [tiled=true|false]",
        summary: "runs the kernel, checks every element against the reference, times it against a copy",
        example: "p0 = f32[64, 64] parameter(0); p1 = f32[64, 64] parameter(1); add0 = f32[64, 64] add(p0, p1); bench add0 device=cpu reps=3",
        run: bench_cmd,
    },
];

fn fusion_name(a: &Args) -> Result<(String, Span), Diagnostic> {
    match a.items().next() {
        Some(Arg::Word(w, span)) => Ok((w.clone(), *span)),
        Some(other) => Err(Diagnostic::at(
            "expected the name of a fusion or instruction",
            other.span(),
        )),
        None => Err(
            Diagnostic::at(format!("`{}` needs a fusion", a.call.name), a.span()).with_help(
                "define one with HLO text, e.g. a fused computation or an instruction line",
            ),
        ),
    }
}

/// The kernel spec of the fusion named by the first argument.
fn spec(s: &Session, a: &Args) -> Result<KernelSpec, Diagnostic> {
    let (name, span) = fusion_name(a)?;
    let module = &s.hlo.module;
    let r = match s.hlo.resolve(&name) {
        Some(HloTarget::Computation(c)) => from_hlo::from_computation(module, c),
        Some(HloTarget::Instr(c, id)) => {
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
        None => {
            let names = s.hlo.names();
            let mut d = Diagnostic::at(format!("no fusion or instruction named `{name}`"), span)
                .with_label("not defined in this session");
            if let Some(x) = suggest(&name, names.iter().map(String::as_str)) {
                d = d.with_help(format!("did you mean `{x}`?"));
            }
            return Err(d);
        }
    };
    r.map_err(|m| Diagnostic::at(m, span))
}

fn span_of(a: &Args, key: &str) -> Span {
    a.kv(key).map_or(a.span(), |v| v.span())
}

fn config(a: &Args) -> Result<(LaunchConfig, Option<bool>), Diagnostic> {
    let d = LaunchConfig::default();
    let cfg = LaunchConfig {
        block: a.kv_int("block")?.unwrap_or(d.block),
        vector: a.kv_int("vector")?.unwrap_or(d.vector),
        unroll: a.kv_int("unroll")?.unwrap_or(d.unroll),
    };
    let tiled = match a.kv_word("tiled")?.as_deref() {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(w) => {
            return Err(Diagnostic::at(
                format!("`tiled=` takes true or false, not `{w}`"),
                span_of(a, "tiled"),
            ))
        }
    };
    Ok((cfg, tiled))
}

fn launch_for(s: &Session, a: &Args) -> Result<(KernelSpec, Launch), Diagnostic> {
    let spec = spec(s, a)?;
    let (cfg, tiled) = config(a)?;
    let l = launch::choose(&spec, cfg, tiled).map_err(|e| {
        let key = ["vector", "block", "unroll", "tiled"]
            .into_iter()
            .find(|k| {
                e.to_string().contains(&format!("{k}="))
                    || (*k == "tiled" && e.to_string().contains("tile"))
            });
        Diagnostic::at(e.to_string(), key.map_or(a.span(), |k| span_of(a, k)))
    })?;
    Ok((spec, l))
}

fn describe(l: &Launch) -> String {
    let mut s = format!(
        "{}, block {}, grid {}",
        l.strategy.name(),
        l.block[0],
        l.grid[0]
    );
    if l.config.vector > 1 && l.strategy == Strategy::Loop {
        s += &format!(", vector {}", l.config.vector);
    }
    if l.config.unroll > 1 && l.strategy == Strategy::Loop {
        s += &format!(", unroll {}", l.config.unroll);
    }
    s
}

fn threads(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (spec, l) = launch_for(s, a)?;
    let err = |e: crate::MapError| Diagnostic::at(e.to_string(), a.span());
    let mut sections = vec![OperandMaps {
        label: format!("thread → output ({})", describe(&l)),
        index: 0,
        name: None,
        maps: vec![l.write_map.clone()],
    }];
    match l.strategy {
        Strategy::TiledTranspose { .. } => sections.push(OperandMaps {
            label: "thread → tile read, in output coordinates (phase 1, before the shared-memory transpose)".into(),
            index: 0,
            name: None,
            maps: vec![l.read_map.clone()],
        }),
        Strategy::RowReduction | Strategy::ColumnReduction => sections.push(OperandMaps {
            label: "thread → reduced operand element".into(),
            index: 0,
            name: None,
            maps: vec![l.read_map.clone()],
        }),
        Strategy::Loop => {}
    }
    for acc in launch::accesses(&spec, &l).map_err(err)? {
        let m = thread_to_input(&spec, &l, &acc).map_err(err)?;
        let t = &spec.inputs[acc.input];
        let label = format!("thread → operand {} ({})", acc.input, t.name);
        match sections.iter_mut().find(|x| x.label == label) {
            Some(sec) => {
                if !sec.maps.contains(&m) {
                    sec.maps.push(m)
                }
            }
            None => sections.push(OperandMaps {
                label,
                index: acc.input,
                name: None,
                maps: vec![m],
            }),
        }
    }
    Ok(Value::Indexing(Indexing {
        title: format!("threads {}", spec.name),
        operands: sections,
    }))
}

fn coalescing_cmd(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let (spec, l) = launch_for(s, a)?;
    let r = coalescing::analyse(&spec, &l).map_err(|e| Diagnostic::at(e.to_string(), a.span()))?;
    let mut t = Table {
        title: Some(format!(
            "coalescing of {} ({}); {} warp{} checked{}",
            spec.name,
            describe(&l),
            r.warps_checked,
            if r.warps_checked == 1 { "" } else { "s" },
            if r.sampled { ", sampled" } else { "" }
        )),
        headers: [
            "operand",
            "layout",
            "sectors/load",
            "ideal",
            "lines/load",
            "ideal",
            "verdict",
            "XLA's rule",
        ]
        .map(String::from)
        .to_vec(),
        ..Default::default()
    };
    for o in &r.operands {
        let per = |x: u64| {
            if o.loads == 0 {
                "0".to_string()
            } else {
                format!("{:.1}", x as f64 / o.loads as f64)
            }
        };
        t.rows.push(vec![
            o.label.clone(),
            o.tensor.shape_text(),
            per(o.sectors),
            per(o.ideal_sectors),
            per(o.lines),
            per(o.ideal_lines),
            if o.coalesced {
                "coalesced".into()
            } else {
                "NOT coalesced".into()
            },
            if o.rule_coalesced {
                "coalesced".into()
            } else {
                "not coalesced".into()
            },
        ]);
    }
    for o in &r.operands {
        t.notes.push(format!("{}: offset {}", o.label, o.offsets));
        if let Some(w) = &o.worst {
            let at = if w.at.is_empty() {
                String::new()
            } else {
                format!(" at {}", w.at)
            };
            t.notes.push(format!(
                "  worst warp: block {} warp {}{at}: {} sectors for {} elements (ideal {})",
                w.block, w.warp, w.sectors, w.elements, w.ideal
            ));
        }
        if o.through_tile {
            t.notes.push("  read through the shared-memory tile: rows of the input, so a warp reads 128 contiguous bytes".into());
        }
        if o.coalesced != o.rule_coalesced {
            let stride = o.th_x_stride.unwrap_or(0);
            t.notes.push(if o.coalesced {
                format!("  XLA's rule looks only at the stride in th_x ({stride} elements); the count shows the warp's bytes still fall in few sectors")
            } else {
                format!("  XLA's rule sees stride {stride} in th_x and calls it coalesced; the count shows warps that straddle rows or skip elements")
            });
        }
    }
    Ok(Value::Table(t))
}

fn target(a: &Args) -> Result<Target, Diagnostic> {
    match a.kv_word("target")?.as_deref() {
        None | Some("cuda") | Some("gpu") => Ok(Target::Cuda),
        Some("cpu") => Ok(Target::Cpu),
        Some(w) => Err(Diagnostic::at(
            format!("`target=` takes cuda or cpu, not `{w}`"),
            span_of(a, "target"),
        )),
    }
}

fn emit_cmd(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let naive = a.flag("naive");
    let tgt = target(a)?;
    let err = |e: crate::MapError| Diagnostic::at(e.to_string(), a.span());
    let e = match tgt {
        Target::Cuda => {
            let (spec, l) = launch_for(s, a)?;
            emit::cuda::emit(&spec, &l, naive).map_err(err)?
        }
        Target::Cpu => {
            let spec = spec(s, a)?;
            emit::cpu::emit(&spec, naive).map_err(err)?
        }
    };
    Ok(Value::Kernel(super::Kernel {
        name: e.name,
        target: tgt.name().into(),
        source: e.source,
    }))
}

fn bench_cmd(s: &mut Session, a: &Args) -> Result<Value, Diagnostic> {
    let spec = spec(s, a)?;
    let device = match a.kv_word("device")?.as_deref() {
        None | Some("auto") => Device::Auto,
        Some("gpu") | Some("cuda") => Device::Gpu,
        Some("cpu") => Device::Cpu,
        Some(w) => {
            return Err(Diagnostic::at(
                format!("`device=` takes auto, gpu or cpu, not `{w}`"),
                span_of(a, "device"),
            ))
        }
    };
    let reps = match a.kv_int("reps")? {
        None => 10,
        Some(n) if (1..=10_000).contains(&n) => n as usize,
        Some(n) => {
            return Err(Diagnostic::at(
                format!("reps={n} is not in [1, 10000]"),
                span_of(a, "reps"),
            ))
        }
    };
    let naive = a.flag("naive");
    let (config, tiled) = config(a)?;
    let opts = Options {
        device,
        reps,
        warmups: 2,
        progress: true,
        config,
        tiled,
    };
    let o = bench::run(&spec, &opts, !naive, naive).map_err(|e| {
        Diagnostic::at(
            e.to_string(),
            if device == Device::Gpu {
                span_of(a, "device")
            } else {
                a.span()
            },
        )
    })?;
    let main = &o.variants[0];
    let mut b = super::Bench {
        name: format!("{} ({})", spec.name, main.label),
        device: o.device.clone(),
        verified: o.variants.iter().all(|v| v.verified),
        median_s: main.timing.median_s,
        min_s: main.timing.min_s,
        max_s: main.timing.max_s,
        bytes: o.bytes,
        gbps: o.gbps(&main.timing),
        roofline_pct: o.copy_pct(&main.timing),
        extra: vec![],
    };
    for v in &o.variants[1..] {
        b.extra.push((
            v.label.clone(),
            format!(
                "median {:.3} ms (min {:.3}, max {:.3}), {:.2} GB/s, {:.1}% of copy bandwidth, verified",
                v.timing.median_s * 1e3,
                v.timing.min_s * 1e3,
                v.timing.max_s * 1e3,
                o.gbps(&v.timing),
                o.copy_pct(&v.timing)
            ),
        ));
        b.extra.push((
            format!("{} / {}", main.label, v.label),
            format!(
                "{:.2}x faster",
                v.timing.median_s / main.timing.median_s.max(1e-12)
            ),
        ));
    }
    b.extra.push((
        "copy".into(),
        format!(
            "{} bytes in {:.3} ms, {:.2} GB/s",
            o.bytes,
            o.copy.median_s * 1e3,
            o.gbps(&o.copy)
        ),
    ));
    b.extra.push((
        "reps".into(),
        format!("{reps} after 2 warm-ups; every output element checked against the reference"),
    ));
    Ok(Value::Bench(b))
}
