//! The GPU commands' values as tables and lines: `coalescing` and `bench`. Text, HTML and
//! JSON read the same table, so the three agree by construction.

use crate::gpu::bench::measure::Note;
use crate::gpu::bench::{ms, Ratio, Timing};
use crate::value::{Bench, Coalescing, Table};

/// `coalescing`: one row per operand (the writes last), then each operand's offset map, its
/// worst warp, what the analysis assumed, and where XLA's own verdict differs from the
/// count.
pub fn coalescing_table(c: &Coalescing) -> Table {
    let r = &c.report;
    let mut t = Table {
        title: Some(format!(
            "coalescing of {} ({}); {} warp{} checked{}",
            c.fusion,
            c.launch,
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
            "XLA's analysis",
        ]
        .map(String::from)
        .to_vec(),
        ..Default::default()
    };
    for o in &r.operands {
        let per = |x: u64| {
            if o.loads == 0 {
                "-".to_string()
            } else {
                format!("{:.1}", x as f64 / o.loads as f64)
            }
        };
        let verdict = match (o.read(), o.coalesced) {
            (false, _) => "not read",
            (true, true) => "coalesced",
            (true, false) => "NOT coalesced",
        };
        let xla = match o.xla {
            None => "n/a",
            Some(true) => "coalesced",
            Some(false) => "not coalesced",
        };
        t.rows.push(vec![
            o.label.clone(),
            o.tensor.shape_text(),
            per(o.sectors),
            per(o.ideal_sectors),
            per(o.lines),
            per(o.ideal_lines),
            verdict.into(),
            xla.into(),
        ]);
    }
    for o in &r.operands {
        let Some(offsets) = &o.offsets else {
            t.notes.push(format!(
                "{}: never read by the fusion (XLA counts such an operand as coalesced)",
                o.label
            ));
            continue;
        };
        if offsets.is_known_empty() {
            t.notes.push(format!(
                "{}: read by no thread of this launch (its map is KNOWN EMPTY; XLA counts it as coalesced)",
                o.label
            ));
            continue;
        }
        t.notes.push(format!("{}: offset {}", o.label, offsets));
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
        for runtime in [true, false] {
            let vars: Vec<String> = o
                .assumed
                .iter()
                .filter(|v| v.runtime == runtime)
                .map(|v| {
                    let size = v.bounds.hi - v.bounds.lo + 1;
                    format!(
                        "{} in [{}, {}]{}",
                        v.name,
                        v.bounds.lo,
                        v.bounds.hi,
                        if v.checked < size {
                            format!(" ({} of {size} values sampled)", v.checked)
                        } else {
                            String::new()
                        }
                    )
                })
                .collect();
            if vars.is_empty() {
                continue;
            }
            let one = vars.len() == 1;
            let what = match (runtime, one) {
                (true, true) => "is a start read at run time",
                (true, false) => "are starts read at run time",
                (false, true) => "is a loop of the fusion, not of the launch",
                (false, false) => "are loops of the fusion, not of the launch",
            };
            t.notes.push(format!(
                "  assumed: {} {what}: {} one value for the whole warp, each value a load of its own{}",
                vars.join(", "),
                if one { "taken as" } else { "each taken as" },
                if runtime {
                    "; XLA takes a runtime variable at its midpoint"
                } else {
                    ""
                }
            ));
        }
        match o.xla {
            Some(x) if x != o.coalesced => t.notes.push(if x {
                "  XLA's analysis looks at the first warp only, in 128-byte transactions, and allows 10%: it calls this coalesced; the count over every warp checked finds loads that touch more than one sector over the ideal".to_string()
            } else {
                format!(
                    "  XLA's analysis (the first warp, 128-byte transactions, within 10% of the ideal) calls this not coalesced; the count finds every warp's bytes in at most one sector over the ideal{}",
                    o.th_x_stride.map_or(String::new(), |s| format!(" (stride {s} elements in th_x)"))
                )
            }),
            _ => {}
        }
    }
    t
}

/// `bench`'s main figure: `NAME (LABEL)`, and its timings against the copy.
pub struct BenchHead {
    pub name: String,
    pub device: String,
    pub verified: bool,
    pub median_s: f64,
    pub min_s: f64,
    pub max_s: f64,
    pub bytes: u64,
    pub gbps: f64,
    pub roofline_pct: f64,
}

pub fn bench_head(b: &Bench) -> BenchHead {
    let o = &b.outcome;
    let (label, t) = match b.main() {
        Some(m) => (m.label.as_str(), m.timing.clone()),
        None => ("", Timing::from_samples(vec![])),
    };
    BenchHead {
        name: format!("{} ({label})", b.fusion),
        device: o.device.clone(),
        verified: b.verified(),
        median_s: t.median_s,
        min_s: t.min_s,
        max_s: t.max_s,
        bytes: o.bytes,
        gbps: o.gbps(&t),
        roofline_pct: o.copy_pct(&t),
    }
}

/// The lines under `bench`'s main figure, as (label, text): what the mapping means on
/// this device, each other variant's time and how the main one compares with it (the
/// paired ratio of the interleaved rounds), the copy, and how it was measured.
pub fn bench_lines(b: &Bench) -> Vec<(String, String)> {
    let mut lines = Vec::new();
    for n in &b.notes {
        lines.push(match n {
            Note::TileOnGpu {
                tile,
                block,
                vector,
                unroll,
            } => (
                "mapping".to_string(),
                format!(
                    "its CPU tile ({}) does not apply on the GPU; the launch is block={block} vector={vector} unroll={unroll}",
                    crate::gpu::mapping::join(tile),
                ),
            ),
            Note::LaunchKeysOnCpu(keys) => (
                "mapping".to_string(),
                format!(
                    "{} set{} the GPU launch; on the CPU the kernel runs the loop nest tiled by tile=",
                    keys.join(" "),
                    if keys.len() == 1 { "s" } else { "" },
                ),
            ),
            Note::Launch(args) => ("launch".to_string(), args.clone()),
            Note::LaunchOnCpu(args) => (
                "mapping".to_string(),
                format!(
                    "{args} is a GPU launch; on the CPU the kernel is the untiled loop (a CPU mapping is tile=(...))"
                ),
            ),
            Note::Default { launch, rules } => {
                lines.push(("ran".to_string(), launch.clone()));
                for r in rules {
                    lines.push(("default".to_string(), r.clone()));
                }
                continue;
            }
        });
    }
    let o = &b.outcome;
    // Each variant's code (PTX instructions, registers, spills) on its own line.
    for v in &o.variants {
        if let Some(code) = &v.code {
            lines.push((format!("{} code", v.label), code.clone()));
        }
    }
    if let Some(main) = o.variants.first() {
        for v in &o.variants[1..] {
            lines.push((
                v.label.clone(),
                format!(
                    "median {} ms (min {}, max {}), {:.2} GB/s, {:.1}% of copy bandwidth, {}",
                    ms(v.timing.median_s),
                    ms(v.timing.min_s),
                    ms(v.timing.max_s),
                    o.gbps(&v.timing),
                    o.copy_pct(&v.timing),
                    if v.verified {
                        "verified"
                    } else {
                        "NOT verified"
                    }
                ),
            ));
            let ratio = Ratio::paired(&v.timing.samples, &main.timing.samples);
            lines.push((
                format!("{} / {}", main.label, v.label),
                match ratio {
                    Some(r) => r.describe(),
                    None => "not timed".to_string(),
                },
            ));
        }
        lines.push((
            "copy".into(),
            format!(
                "{} bytes in {} ms, {:.2} GB/s",
                o.bytes,
                ms(o.copy.median_s),
                o.gbps(&o.copy)
            ),
        ));
    }
    lines.push((
        "reps".into(),
        match &o.method {
            Some(m) => format!(
                "{} samples after 2 warm-ups, each {m}; every output element checked against the reference",
                b.reps
            ),
            None => format!(
                "{} {} after 2 warm-ups; every output element checked against the reference",
                b.reps,
                if b.on_gpu {
                    "repetitions"
                } else {
                    "rounds, variants and copy interleaved"
                }
            ),
        },
    ));
    lines
}

/// `coalescing FUSION tile=(..)`: one row per operand and representative tile (the write
/// last), then what the columns mean and which tiles were counted.
pub fn tiled_coalescing_table(r: &crate::gpu::tile_coalescing::TiledReport) -> Table {
    use crate::gpu::tile_coalescing::SEGMENT;
    let sizes = crate::gpu::mapping::join(&r.tile);
    let n: i64 = r.grid.iter().product();
    let grid: Vec<String> = r.grid.iter().map(|g| g.to_string()).collect();
    let clipped = if r.clipped != r.tile {
        format!(
            " clipped to ({}) as XLA clips a tile to the shape",
            crate::gpu::mapping::join(&r.clipped)
        )
    } else {
        String::new()
    };
    let title = format!(
        "coalescing of {} through tiles ({sizes}){clipped}, {n} tile{} ({}); {SEGMENT}-byte transactions",
        r.fusion,
        if n == 1 { "" } else { "s" },
        grid.join(" × ")
    );
    let mut t = Table {
        title: Some(title),
        headers: [
            "operand",
            "layout",
            "tile",
            "bytes",
            "transactions",
            "ideal",
            "utilization",
            "min run",
            "verdict",
        ]
        .map(String::from)
        .to_vec(),
        ..Default::default()
    };
    for o in &r.operands {
        for (ti, c) in r.tiles.iter().zip(&o.counts) {
            t.rows.push(vec![
                o.label.clone(),
                o.tensor.shape_text(),
                ti.which.clone(),
                c.bytes.to_string(),
                c.transactions.to_string(),
                c.ideal.to_string(),
                format!("{:.1}%", c.utilization()),
                format!("{} B", c.min_run),
                if c.coalesced {
                    "coalesced".into()
                } else {
                    "NOT coalesced".into()
                },
            ]);
        }
    }
    t.notes.push(format!(
        "bytes: distinct bytes the tile touches (each once); transactions: distinct {SEGMENT}-byte aligned segments; ideal: ceil(bytes / {SEGMENT}); utilization: bytes / (transactions × {SEGMENT}); min run: shortest contiguous run; {}",
        r.verdict.describe()
    ));
    for ti in &r.tiles {
        let bx: Vec<String> = ti
            .lo
            .iter()
            .zip(&ti.hi)
            .map(|(l, h)| format!("{l}:{}", h + 1))
            .collect();
        t.notes.push(format!(
            "{} tile: index ({}), output [{}]",
            ti.which,
            crate::gpu::mapping::join(&ti.index),
            bx.join(", ")
        ));
    }
    for o in &r.operands {
        if o.counts.iter().any(|c| c.reads > c.elements) {
            t.notes.push(format!(
                "{}: elements read more than once per tile (broadcast or window); their bytes count once",
                o.label
            ));
        }
    }
    t
}
