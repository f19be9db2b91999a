//! `dump`'s report in the three front ends: text (terminal, transcripts), HTML (notebook),
//! JSON (`--json`). The text is a section per module, a block per fusion, then the counts.

use super::Style;
use crate::dump::{DumpReport, FusionReport, Status};
use colored::Colorize;
use serde_json::{json, Value as Json};

fn mark(s: &Status, style: Style) -> String {
    let w = s.word();
    match (s, style) {
        (Status::Ok(_), Style::Ansi) => w.green().to_string(),
        (Status::Failed(_), Style::Ansi) => w.red().to_string(),
        (Status::Skipped(_) | Status::Undetermined(_), Style::Ansi) => w.yellow().to_string(),
        _ => w.to_string(),
    }
}

fn status_line(s: &Status, style: Style) -> String {
    match s {
        Status::Ok(d) if d.is_empty() => mark(s, style),
        Status::Ok(d) | Status::Failed(d) | Status::Skipped(d) | Status::Undetermined(d) => {
            format!("{} ({d})", mark(s, style))
        }
    }
}

fn us(t: f64) -> String {
    if t >= 100.0 {
        format!("{t:.0} µs")
    } else {
        format!("{t:.1} µs")
    }
}

fn fusion_text(f: &FusionReport, style: Style) -> String {
    let mut s = format!("  {} ({}) {} {}", f.name, f.computation, f.kind, f.shape);
    if let Some(l) = &f.location {
        s += &format!(" at {l}");
    }
    s.push('\n');
    match &f.indexing {
        Ok(ops) => {
            for o in ops {
                if o.maps.is_empty() {
                    s += &format!("    {} {}: not read\n", o.label, o.shape);
                }
                for m in &o.maps {
                    s += &format!("    {} {}: {m}\n", o.label, o.shape);
                }
            }
        }
        Err(e) => s += &format!("    indexing: {e}\n"),
    }
    s += &match &f.launch {
        Status::Ok(d) => format!("    launch: ixmap {d}"),
        other => format!("    launch: ixmap {}", status_line(other, style)),
    };
    if let Some(x) = &f.xla_launch {
        s += &format!(" · XLA {x}");
    }
    s.push('\n');
    if let Ok(c) = &f.coalescing {
        let parts: Vec<String> = c
            .iter()
            .map(|o| {
                let v = if o.coalesced {
                    "coalesced"
                } else {
                    "uncoalesced"
                };
                let v = match style {
                    Style::Ansi if o.coalesced => v.green().to_string(),
                    Style::Ansi => v.red().to_string(),
                    _ => v.to_string(),
                };
                format!("{} {v} ({})", o.label, o.detail)
            })
            .collect();
        s += &format!("    coalescing: {}\n", parts.join(", "));
    } else if let Err(e) = &f.coalescing {
        if f.launch.is_ok() && !e.is_empty() {
            s += &format!("    coalescing: not analysed ({e})\n");
        }
    }
    let asked = |s: &Status| !matches!(s, Status::Skipped(w) if w == "not asked");
    s += &match (&f.emit_cuda, &f.emit_cpu) {
        (c, h) if !asked(c) && !asked(h) => String::new(),
        // One reason for both (an op with no emitter): said once.
        (Status::Failed(a), Status::Failed(b)) if a == b => {
            format!("    emit: {} ({a})\n", mark(&f.emit_cuda, style))
        }
        (c, h) => format!(
            "    emit: CUDA {}, C {}\n",
            status_line(c, style),
            status_line(h, style)
        ),
    };
    if asked(&f.verify) {
        s += &format!("    verify: {}\n", status_line(&f.verify, style));
    }
    if let Some(o) = &f.occupancy {
        let xla_grid = f.xla_ncu_launch.as_ref().and_then(|(_, g)| ncu_dims(g));
        s += &occupancy_line(o, f.xla_resources.as_ref(), xla_grid, style);
    }
    if let Some(b) = &f.bench {
        s += &format!("    bench: {}\n", status_line(b, style));
    }
    match (f.xla_time_us, f.ixmap_time_us) {
        (Some((x, n)), Some(i)) => {
            s += &format!(
                "    time: ixmap {} (bench: a batch of launches) · XLA {} (ncu{}, one kernel, caches flushed) · ixmap / XLA {:.2} across the two methods (benches/xla_gpu.py times both under ncu)\n",
                us(i),
                us(x),
                if n > 1 {
                    format!(", median of {n} launches")
                } else {
                    String::new()
                },
                i / x
            )
        }
        (Some((x, n)), None) => {
            s += &format!(
                "    time: XLA {} (ncu{})\n",
                us(x),
                if n > 1 {
                    format!(", median of {n} launches")
                } else {
                    String::new()
                }
            )
        }
        (None, Some(i)) => s += &format!("    time: ixmap {}\n", us(i)),
        (None, None) => {}
    }
    s
}

/// `    occupancy: ixmap 51 registers, ..: 4 blocks of 256 threads an SM, .. · XLA 48
/// registers, .. (ncu): 5 blocks ..`; XLA's figures from Nsight Compute's registers and
/// shared memory, through the same rules (`gpu::occupancy`). Where XLA's kernel keeps more
/// warps resident than ixmap's, the line says so.
fn occupancy_line(
    o: &Result<crate::dump::KernelOccupancy, String>,
    xla: Option<&crate::dump::XlaResources>,
    xla_grid: Option<i64>,
    style: Style,
) -> String {
    use crate::gpu::occupancy::{occupancy, SmLimits};
    let k = match o {
        Ok(k) => k,
        Err(e) => return format!("    occupancy: not found ({e})\n"),
    };
    let sms = crate::gpu::launch::DeviceLimits::H100.sms;
    let sass = k
        .sass_instructions
        .map(|n| format!(", {n} SASS instructions"))
        .unwrap_or_default();
    let mut s = format!(
        "    occupancy ({} on an H100, {sms} SMs): ixmap {}{sass}: {}; {}",
        k.occupancy.limits.arch,
        k.resources.summary(),
        k.occupancy.summary(),
        k.occupancy.waves_summary(k.grid, sms)
    );
    if let Some(x) = xla {
        match occupancy(x.threads, x.registers, x.shared_bytes, SmLimits::SM_90) {
            Ok(xo) => {
                s += &format!(
                    " · XLA {} registers, {} bytes of shared memory (ncu): {}",
                    x.registers,
                    x.shared_bytes,
                    xo.summary()
                );
                // Compared only where both split the work alike (the same threads a
                // block and blocks; a GEMM's tiles differ), and by what each SM holds of
                // the grid: a grid that does not fill the device leaves both below their
                // occupancy, and then they do not differ.
                let alike = x.threads == k.occupancy.threads_per_block && xla_grid == Some(k.grid);
                let (mine, theirs) = (
                    k.occupancy.resident_warps(k.grid, sms),
                    xo.resident_warps(k.grid, sms),
                );
                if alike && theirs > mine {
                    let w = format!(
                        " · ixmap keeps fewer warps resident an SM than XLA ({mine} against {theirs})"
                    );
                    s += &match style {
                        Style::Ansi => w.yellow().to_string(),
                        _ => w,
                    };
                }
            }
            Err(e) => s += &format!(" · XLA: {e}"),
        }
    }
    s.push('\n');
    s
}

/// `(1024, 2, 1)` as ncu prints a grid: the product, 2048.
fn ncu_dims(s: &str) -> Option<i64> {
    s.trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .map(|d| d.trim().parse::<i64>().ok())
        .try_fold(1i64, |a, d| d.map(|d| a.saturating_mul(d)))
}

/// The counts line: what a script or a CI log greps.
pub fn counts_line(r: &DumpReport) -> String {
    let c = &r.counts;
    let mut s = format!(
        "{} module{} ({} loaded), {} fusion{}: {} indexed, {} launched, {} emitted for CUDA, {} for C",
        c.modules,
        if c.modules == 1 { "" } else { "s" },
        c.modules_loaded,
        c.fusions,
        if c.fusions == 1 { "" } else { "s" },
        c.indexed,
        c.launched,
        c.emitted_cuda,
        c.emitted_cpu,
    );
    if r.options.verify {
        s += &format!(", {} verified", c.verified);
        if c.verified_scaled > 0 {
            s += &format!(
                " ({} at their own shapes, {} at scaled-down shapes)",
                c.verified - c.verified_scaled,
                c.verified_scaled
            );
        }
        if c.verify_failed > 0 {
            s += &format!(" ({} failed verification)", c.verify_failed);
        }
        if c.verify_undetermined > 0 {
            s += &format!(
                " ({} undetermined: the HLO leaves the values that differ open)",
                c.verify_undetermined
            );
        }
    }
    s
}

pub fn text(r: &DumpReport, style: Style) -> String {
    let mut s = String::new();
    for m in &r.modules {
        let name = if m.name.is_empty() { "?" } else { &m.name };
        let file = std::path::Path::new(&m.file)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_else(|| m.file.clone());
        let head = if m.file == "(session)" {
            format!("module {name} (this session)")
        } else {
            format!("module {name} ({file})")
        };
        s += &match style {
            Style::Ansi => head.bold().to_string(),
            _ => head,
        };
        s.push('\n');
        if let Some(e) = &m.error {
            for l in e.lines() {
                s += &format!("  {l}\n");
            }
            continue;
        }
        if m.fusions.is_empty() {
            s += "  no fusions\n";
        }
        for f in &m.fusions {
            s += &fusion_text(f, style);
        }
        for o in &m.others {
            s += &format!(
                "  {} ({}{}): not a fusion, not surveyed\n",
                o.name,
                o.opcode,
                o.target
                    .as_ref()
                    .map(|t| format!(" {t}"))
                    .unwrap_or_default()
            );
        }
    }
    s += &counts_line(r);
    s
}

fn status_json(s: &Status) -> Json {
    json!({ "status": s.word(), "detail": s.detail() })
}

pub fn json(r: &DumpReport) -> Json {
    let c = &r.counts;
    json!({
        "counts": {
            "modules": c.modules,
            "modules_loaded": c.modules_loaded,
            "fusions": c.fusions,
            "indexed": c.indexed,
            "launched": c.launched,
            "emitted_cuda": c.emitted_cuda,
            "emitted_cpu": c.emitted_cpu,
            "verified": c.verified,
            "verified_scaled": c.verified_scaled,
            "verify_failed": c.verify_failed,
            "verify_undetermined": c.verify_undetermined,
        },
        "modules": r.modules.iter().map(|m| json!({
            "file": m.file,
            "name": m.name,
            "error": m.error,
            "others": m.others.iter().map(|o| json!({
                "name": o.name, "opcode": o.opcode, "target": o.target,
            })).collect::<Vec<_>>(),
            "fusions": m.fusions.iter().map(|f| json!({
                "name": f.name,
                "computation": f.computation,
                "kind": f.kind,
                "shape": f.shape,
                "location": f.location,
                "indexing": match &f.indexing {
                    Ok(ops) => json!(ops.iter().map(|o| json!({
                        "label": o.label, "shape": o.shape, "maps": o.maps,
                    })).collect::<Vec<_>>()),
                    Err(e) => json!({ "error": e }),
                },
                "launch": status_json(&f.launch),
                "xla_launch": f.xla_launch,
                "coalescing": match &f.coalescing {
                    Ok(c) => json!(c.iter().map(|o| json!({
                        "label": o.label, "coalesced": o.coalesced, "detail": o.detail,
                    })).collect::<Vec<_>>()),
                    Err(e) => json!({ "error": e }),
                },
                "emit_cuda": status_json(&f.emit_cuda),
                "emit_cpu": status_json(&f.emit_cpu),
                "verify": status_json(&f.verify),
                "verified_scaled": f.verified_scaled,
                "xla_time_us": f.xla_time_us.map(|t| t.0),
                "xla_launches": f.xla_time_us.map(|t| t.1),
                "ixmap_time_us": f.ixmap_time_us,
                "bench": f.bench.as_ref().map(status_json),
                "occupancy": f.occupancy.as_ref().map(|o| match o {
                    Ok(k) => json!({
                        "registers": k.resources.registers,
                        "spill_bytes": k.resources.spill_stores + k.resources.spill_loads,
                        "shared_bytes": k.resources.shared_bytes,
                        "threads_per_block": k.occupancy.threads_per_block,
                        "blocks_per_sm": k.occupancy.blocks,
                        "warps_per_sm": k.occupancy.warps(),
                        "limited_by": k.occupancy.limiter().name(),
                        "grid": k.grid,
                        "sass_instructions": k.sass_instructions,
                    }),
                    Err(e) => json!({ "error": e }),
                }),
                "xla_resources": f.xla_resources.map(|x| json!({
                    "threads_per_block": x.threads,
                    "registers": x.registers,
                    "shared_bytes": x.shared_bytes,
                    "ncu_warps_per_sm": x.ncu_warps,
                })),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn cell(s: &Status) -> String {
    let (color, w) = match s {
        Status::Ok(_) => ("#1a7f37", "✓"),
        Status::Failed(_) => ("#cf222e", "✗"),
        Status::Skipped(_) => ("#9a6700", "–"),
        Status::Undetermined(_) => ("#9a6700", "?"),
    };
    format!(
        "<td title=\"{}\" style=\"color:{color}\">{w}</td>",
        esc(s.detail())
    )
}

/// A table per module: one row per fusion, with its maps and every reason in a
/// `<details>` of its own.
pub fn html(r: &DumpReport) -> String {
    let mut s = String::from("<div class=\"ixmap-dump\">");
    for m in &r.modules {
        s += &format!(
            "<h4>module {} <small><code>{}</code></small></h4>",
            esc(&m.name),
            esc(&m.file)
        );
        if let Some(e) = &m.error {
            s += &format!("<pre style=\"color:#cf222e\">{}</pre>", esc(e));
            continue;
        }
        s += "<table><thead><tr><th>fusion</th><th>kind</th><th>shape</th><th>ixmap launch</th><th>XLA launch</th><th>coalesced</th><th>CUDA</th><th>C</th><th>verified</th><th>XLA µs</th><th>ixmap µs</th></tr></thead><tbody>";
        for f in &m.fusions {
            let coal = match &f.coalescing {
                Ok(c) => format!("{}/{}", c.iter().filter(|o| o.coalesced).count(), c.len()),
                Err(_) => "–".into(),
            };
            let maps = match &f.indexing {
                Ok(ops) => ops
                    .iter()
                    .flat_map(|o| {
                        o.maps.iter().map(move |m| {
                            format!(
                                "<div>{} {}: <code>{}</code></div>",
                                esc(&o.label),
                                esc(&o.shape),
                                esc(m)
                            )
                        })
                    })
                    .collect::<String>(),
                Err(e) => esc(e),
            };
            s += &format!(
                "<tr><td><details><summary><code>{}</code></summary>{}{}</details></td><td>{}</td><td><code>{}</code></td><td title=\"{}\">{}</td><td>{}</td><td>{coal}</td>{}{}{}<td>{}</td><td>{}</td></tr>",
                esc(&f.name),
                f.location.as_ref().map(|l| format!("<div><small>{}</small></div>", esc(l))).unwrap_or_default(),
                maps,
                esc(&f.kind),
                esc(&f.shape),
                esc(f.launch.detail()),
                if f.launch.is_ok() { esc(f.launch.detail()) } else { "–".into() },
                esc(f.xla_launch.as_deref().unwrap_or("")),
                cell(&f.emit_cuda),
                cell(&f.emit_cpu),
                cell(&f.verify),
                f.xla_time_us.map(|t| format!("{:.1}", t.0)).unwrap_or_default(),
                match (f.ixmap_time_us, &f.bench) {
                    (Some(t), _) => format!("{t:.1}"),
                    (None, Some(b)) => format!(
                        "<span title=\"{}\">{}</span>",
                        esc(b.detail()),
                        if b.is_ok() { "CPU" } else { "–" }
                    ),
                    (None, None) => String::new(),
                },
            );
        }
        s += "</tbody></table>";
    }
    s += &format!("<p>{}</p></div>", esc(&counts_line(r)));
    s
}

#[cfg(test)]
mod occupancy_tests {
    use super::occupancy_line;
    use crate::dump::{KernelOccupancy, XlaResources};
    use crate::gpu::nvcc::KernelResources;

    fn ixmap(registers: u32, grid: i64) -> KernelOccupancy {
        let resources = KernelResources {
            name: "k".into(),
            registers,
            shared_bytes: 32,
            ..Default::default()
        };
        KernelOccupancy {
            occupancy: resources.occupancy(256).unwrap(),
            resources,
            grid,
            sass_instructions: None,
        }
    }

    const XLA: XlaResources = XlaResources {
        threads: 256,
        registers: 48,
        shared_bytes: 128,
        ncu_warps: Some(40.0),
    };

    /// The RMS norm as it was: 51 registers (4 blocks an SM) against XLA's 48 (5), on
    /// XLA's block and grid: flagged. Not where the grids differ, nor where the grid does
    /// not fill the SMs (132 blocks: one an SM either way), nor where ixmap holds as many.
    #[test]
    fn the_line_flags_fewer_resident_warps_on_the_same_split() {
        let flag = "fewer warps resident an SM than XLA (32 against 40)";
        let line = occupancy_line(
            &Ok(ixmap(51, 1024)),
            Some(&XLA),
            Some(1024),
            super::Style::Plain,
        );
        assert!(line.contains("ixmap 51 registers"), "{line}");
        assert!(
            line.contains("XLA 48 registers, 128 bytes of shared memory (ncu): 5 blocks"),
            "{line}"
        );
        assert!(line.contains(flag), "{line}");
        // With cuobjdump, the kernel's SASS count after its resources.
        let mut counted = ixmap(51, 1024);
        counted.sass_instructions = Some(665);
        let line = occupancy_line(&Ok(counted), None, None, super::Style::Plain);
        assert!(
            line.contains("shared memory, 665 SASS instructions: 4 blocks"),
            "{line}"
        );
        for (regs, grid, xla_grid) in [
            (51, 1024, Some(2048)),
            (51, 132, Some(132)),
            (44, 1024, Some(1024)),
        ] {
            let line = occupancy_line(
                &Ok(ixmap(regs, grid)),
                Some(&XLA),
                xla_grid,
                super::Style::Plain,
            );
            assert!(!line.contains("fewer warps"), "{regs} {grid}: {line}");
        }
        let line = occupancy_line(
            &Err("ptxas not found".into()),
            Some(&XLA),
            None,
            super::Style::Plain,
        );
        assert_eq!(line, "    occupancy: not found (ptxas not found)\n");
    }
}
