//! The regression corpus of real models (tests/data/xla-dumps/, see its README): every file
//! as XLA wrote it loads; every fusion of every optimized module is indexed (its maps
//! checked by brute force against the HLO interpreter), emitted for CUDA (compiled by NVRTC
//! and ptxas with no warning, when they are found; required under CI=true) and for the
//! CPU, and verified: the CUDA text run on the CPU and the C kernel, every element against
//! the reference.
//!
//! CI's time bounds the interpreters' work: a fusion past the budget at its own shapes is
//! brute-forced and verified as the same fused computation with its shapes scaled down
//! (`dump::shrink`: every instruction of the copy passes its op's shape check); the output
//! names each such fusion and its scaling. `ixmap dump tests/data/xla-dumps` verifies at
//! full size (GEMMs up to 2^30 multiply-adds).
//!
//! The goal is every fusion, reached: the tests fail below 100 % and name the fusions.

use ixmap::dump::{self, DumpReport, FusionReport, Options, Status};
use ixmap::hlo::interp::{all_indices, run_outputs, Tensor};
use ixmap::hlo::workspace::Workspace;
use ixmap::hlo::{fusion, Computation};
use ixmap::map::IndexingMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

#[path = "common/brute.rs"]
mod brute;

/// Fusions that must verify (both kernels, every element): every one of the corpus's 112
/// (those past CI's budget at their own shapes as scaled-down copies, said in the output).
const MIN_VERIFIED: usize = 112;
const VERIFY_MAX_ELEMENTS: i64 = 1 << 21;
const VERIFY_MAX_MACS: f64 = (1u64 << 28) as f64;
/// Fusions whose maps the brute-force check covers and passes: every one (53 of them at
/// scaled-down shapes).
const MIN_BRUTE_FORCED: usize = 112;

fn say(s: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{s}");
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/xla-dumps")
}

fn dirs() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(corpus())
        .expect("tests/data/xla-dumps")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

fn survey() -> &'static DumpReport {
    static R: OnceLock<DumpReport> = OnceLock::new();
    R.get_or_init(|| {
        let t = std::time::Instant::now();
        // CI's budget: kernels of up to 2M output elements and GEMMs of up to 2^28
        // multiply-adds are verified (the CPU corpus whole, the GPU corpus's smaller
        // fusions); `ixmap dump tests/data/xla-dumps` verifies the rest at full size.
        let opts = Options {
            verify_max_elements: Some(VERIFY_MAX_ELEMENTS),
            verify_max_macs: Some(VERIFY_MAX_MACS),
            ..Options::default()
        };
        let r = dump::survey(&dirs(), &opts, &mut |_, _, _| {}).expect("the corpus surveys");
        say(&format!(
            "xla dumps: surveyed in {:.1} s: {}",
            t.elapsed().as_secs_f64(),
            ixmap::render::dump::counts_line(&r)
        ));
        r
    })
}

fn fusions() -> impl Iterator<Item = (&'static str, &'static FusionReport)> {
    survey()
        .modules
        .iter()
        .flat_map(|m| m.fusions.iter().map(move |f| (m.file.as_str(), f)))
}

fn short(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

#[test]
fn every_file_loads_as_dumped() {
    let mut n = 0;
    let mut failed = Vec::new();
    for d in dirs() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&d)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "txt"))
            .collect();
        files.sort();
        for f in files {
            n += 1;
            let text = std::fs::read_to_string(&f).unwrap();
            match dump::load_module(&text) {
                Ok(ws) => assert!(
                    ws.module.entry().is_some(),
                    "{}: no ENTRY computation",
                    f.display()
                ),
                Err(e) => failed.push(format!("{}: {}", f.display(), e.render(&text))),
            }
        }
    }
    say(&format!(
        "xla dumps: {} of {n} files load",
        n - failed.len()
    ));
    assert!(n >= 62, "the corpus has its 62 files ({n})");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

#[test]
fn every_fusion_indexes_emits_and_verifies() {
    let r = survey();
    let c = &r.counts;
    assert_eq!(c.modules, c.modules_loaded, "every module loads");
    let mut by_reason: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (file, f) in fusions() {
        let why = match (&f.indexing, &f.emit_cuda, &f.emit_cpu, &f.verify) {
            (Err(e), ..) => format!("indexing: {e}"),
            _ if !f.launch.is_ok() => format!("launch: {}", f.launch.detail()),
            (_, Status::Failed(e), ..) => format!("CUDA: {e}"),
            (_, _, Status::Failed(e), _) => format!("C: {e}"),
            (.., Status::Failed(e)) => format!("verify: {e}"),
            (.., Status::Skipped(e)) => format!("verify skipped: {e}"),
            _ => continue,
        };
        by_reason
            .entry(ixmap::gpu::sweep::reason(&why))
            .or_default()
            .push(format!("{}:{}", short(file), f.name));
    }
    for (why, who) in &by_reason {
        say(&format!("  {:>3} × {why}  ({})", who.len(), who.join(", ")));
    }
    // Which were verified at their own shapes and which, past CI's budget, as the same
    // fused computation with shapes scaled down.
    let scaled: Vec<String> = fusions()
        .filter(|(_, f)| f.verify.is_ok())
        .filter_map(|(file, f)| {
            f.verified_scaled
                .as_ref()
                .map(|c| format!("{}:{} ({c})", short(file), f.name))
        })
        .collect();
    say(&format!(
        "xla dumps: {} of {} fusions verified (goal: all; floor {MIN_VERIFIED}): {} at their own shapes, {} at scaled-down shapes (past {VERIFY_MAX_ELEMENTS} output elements or {VERIFY_MAX_MACS:e} multiply-adds at their own; `ixmap dump tests/data/xla-dumps` verifies them at full size up to 2^30 multiply-adds)",
        c.verified,
        c.fusions,
        c.verified - c.verified_scaled,
        c.verified_scaled
    ));
    for s in &scaled {
        say(&format!("  verified scaled down: {s}"));
    }
    let failing = || {
        by_reason
            .iter()
            .map(|(why, who)| format!("{why}: {}", who.join(", ")))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        c.indexed,
        c.fusions,
        "every fusion is indexed:\n{}",
        failing()
    );
    assert_eq!(
        c.launched,
        c.fusions,
        "every fusion has a launch:\n{}",
        failing()
    );
    assert_eq!(
        c.emitted_cuda,
        c.fusions,
        "every fusion emits CUDA:\n{}",
        failing()
    );
    assert_eq!(
        c.emitted_cpu,
        c.fusions,
        "every fusion emits C:\n{}",
        failing()
    );
    assert_eq!(
        c.verify_failed,
        0,
        "no kernel computes a wrong element:\n{}",
        failing()
    );
    assert!(
        c.verified >= MIN_VERIFIED,
        "{} fusions verified, below the floor {MIN_VERIFIED}:\n{}",
        c.verified,
        failing()
    );
}

const WORK_BUDGET: i64 = 1 << 21;

/// Parameter values for the interpreter: small integers, so that indices and offsets read
/// from parameters fall in and out of bounds.
fn params(comp: &Computation) -> Vec<Tensor> {
    comp.parameters()
        .iter()
        .enumerate()
        .map(|(p, &id)| {
            Tensor::parameter(p, comp.instrs[id].dims(), &move |idx: &[i64]| {
                let h = idx.iter().fold(p as u64 * 7919 + 17, |a, &x| {
                    a.wrapping_mul(31).wrapping_add(x as u64)
                });
                (h % 9) as i64 - 2
            })
        })
        .collect()
}

/// Checks the output → input maps of `comp` against the interpreter at every output
/// element; maps with runtime variables (offsets and indices read at run time) must name at
/// least what is read.
fn brute_force(ws: &Workspace, comp: &Computation) -> Result<(), String> {
    let module = &ws.module;
    let ps = params(comp);
    let outs = run_outputs(module, comp, &ps).map_err(|e| format!("interpreter: {}", e.0))?;
    let fi = fusion::output_to_input(module, comp);
    for (o, per_param) in fi.outputs.iter().enumerate() {
        let out = &outs[o];
        for (p, maps) in per_param.iter().enumerate() {
            let maps: Vec<IndexingMap> = maps.iter().cloned().collect();
            if maps.iter().any(|m| m.is_undefined()) {
                return Err(format!("output {o}, operand {p}: UNDEFINED"));
            }
            // Maps with runtime variables (offsets, indices read at run time) and the
            // operands of ops whose maps are documented over-approximations (an updated
            // tensor is named whole, though the window written over is not read) must
            // name at least what is read.
            let over = maps.iter().any(|m| !m.runtimes.is_empty())
                || comp
                    .instrs
                    .iter()
                    .any(|i| matches!(i.opcode.as_str(), "dynamic-update-slice" | "scatter"));
            for idx in all_indices(&out.dims) {
                let predicted = brute::image_all(&maps, &idx, None);
                let actual = brute::reads(out, &idx, p);
                let ok = if over {
                    actual.is_subset(&predicted)
                } else {
                    actual == predicted
                };
                if !ok {
                    return Err(format!(
                        "output {o} {idx:?}, operand {p}: the interpreter reads {} elements, the maps name {} ({})",
                        actual.len(),
                        predicted.len(),
                        maps.iter().map(|m| m.to_string()).collect::<Vec<_>>().join("; ")
                    ));
                }
            }
        }
    }
    Ok(())
}

#[test]
fn indexing_matches_the_interpreter() {
    let mut checked = 0;
    let mut scaled = Vec::new();
    let mut not_scaled = Vec::new();
    let mut problems = Vec::new();
    for d in dirs() {
        for f in dump::module_files(&[d]).unwrap() {
            let text = std::fs::read_to_string(&f).unwrap();
            let ws = dump::load_module(&text).unwrap();
            let entry = ws.module.entry().unwrap();
            for ins in &entry.instrs {
                let Some(comp) = ws.module.fused_computation(ins) else {
                    continue;
                };
                let what = format!("{}:{}", short(&f.display().to_string()), ins.name);
                let flat;
                let comp = if ixmap::hlo::inline::has_nesting(&ws.module, comp) {
                    flat = ixmap::hlo::inline::flatten(&ws.module, comp);
                    &flat
                } else {
                    comp
                };
                // Past the budget: the same fused computation with its shapes scaled down
                // (every instruction still passes its op's shape check).
                let small;
                let comp = if dump::work(comp) > WORK_BUDGET {
                    match dump::shrink(comp, WORK_BUDGET) {
                        Some((c, changed)) => {
                            scaled.push(format!("{what} ({changed})"));
                            small = c;
                            &small
                        }
                        None => {
                            not_scaled.push(what);
                            continue;
                        }
                    }
                } else {
                    comp
                };
                match brute_force(&ws, comp) {
                    Ok(()) => checked += 1,
                    Err(e) => problems.push(format!("{what}: {e}")),
                }
            }
        }
    }
    say(&format!(
        "xla dumps: indexing of {checked} fusions checked by brute force against the interpreter, {} of them at scaled-down shapes (past {WORK_BUDGET} interpreter steps at their own); {} disagree; {} do not scale down{}",
        scaled.len(),
        problems.len(),
        not_scaled.len(),
        if not_scaled.is_empty() {
            String::new()
        } else {
            format!(" ({})", not_scaled.join(", "))
        }
    ));
    for s in &scaled {
        say(&format!("  scaled: {s}"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        checked >= MIN_BRUTE_FORCED,
        "{checked} fusions brute-forced, below the floor {MIN_BRUTE_FORCED}; not scaled down: {}",
        not_scaled.join(", ")
    );
}

#[test]
fn emitted_cuda_compiles_without_warnings() {
    use ixmap::gpu::nvcc::{self, Nvrtc};
    let nvrtc = match Nvrtc::load() {
        Ok(n) => n,
        Err(e) if in_ci() => panic!("CI=true and {e}"),
        Err(e) => {
            say(&format!(
                "\n*** SKIPPED compiling the corpus's CUDA kernels: {e}\n"
            ));
            return;
        }
    };
    let ptxas = nvcc::find_ptxas();
    assert!(ptxas.is_some() || !in_ci(), "CI=true and ptxas not found");
    let tmp = std::env::temp_dir();
    let mut n = 0;
    let mut problems = Vec::new();
    for (file, f) in fusions() {
        let Some(src) = &f.cuda_source else { continue };
        n += 1;
        let what = format!("{}:{}", short(file), f.name);
        match nvrtc.compile(src, "k.cu", &["--gpu-architecture=compute_90"]) {
            Err(e) => problems.push(format!("{what}: NVRTC: {e}")),
            Ok(c) => {
                if !c.log.is_empty() {
                    problems.push(format!("{what}: NVRTC: {}", c.log));
                }
                if let (Some(ptx), Some(pt)) = (c.ptx, ptxas.as_deref()) {
                    match nvcc::ptxas(pt, &ptx, "sm_90", &tmp) {
                        Ok(a) if a.ok && a.diagnostics.is_empty() => {}
                        Ok(a) => {
                            problems.push(format!("{what}: ptxas: {}", a.diagnostics.join("\n")))
                        }
                        Err(e) => problems.push(format!("{what}: ptxas: {e}")),
                    }
                }
            }
        }
    }
    say(&format!(
        "xla dumps: {n} CUDA kernels compiled by NVRTC for compute_90{}; {} complaints",
        if ptxas.is_some() {
            " and ptxas for sm_90"
        } else {
            ""
        },
        problems.len()
    ));
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// Threads a block and blocks in all of ixmap's launch as `dump` prints it (`row
/// reduction, block 256, grid 2048, ..`; a GEMM's `grid 2048 x 32, block 64`).
fn ixmap_block_grid(text: &str) -> Option<(i64, i64)> {
    let extent = |key: &str| -> Option<i64> {
        let at = text.find(key)? + key.len();
        let mut total = 1i64;
        for part in text[at..].split(" x ") {
            let end = part
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(part.len());
            total = total.checked_mul(part[..end].parse().ok()?)?;
            if end < part.len() {
                break;
            }
        }
        Some(total)
    };
    Some((extent("block ")?, extent("grid ")?))
}

/// Threads a block and blocks in all of a launch as ncu prints it: `(128, 1, 1)`.
fn ncu_extent(text: &str) -> Option<i64> {
    text.trim()
        .strip_prefix('(')?
        .strip_suffix(')')?
        .split(',')
        .try_fold(1i64, |a, x| a.checked_mul(x.trim().parse().ok()?))
}

/// Wherever Nsight Compute recorded the launch XLA made for a fusion (the H100 corpus's
/// `xla-kernel-times-ncu.csv`), ixmap's default launch (`gpu/launch.rs`, XLA's rules, and
/// the tiling a Triton fusion's backend_config prints) has as many threads a block and as
/// many blocks: the rules are checked against what XLA did, fusion by fusion (loops,
/// unrolled or not, a variadic reduce-window, row reductions with and without an
/// epilogue, a transpose, a concatenate, a scatter, Triton normalizations).
///
/// GEMMs are the exception, on purpose: XLA's Triton tile (16 × 8, 2 warps) is one
/// tensor-core fragment, and ixmap's kernel multiplies on the CUDA cores, where that tile
/// ran 1.2–2.3× XLA's time; ixmap's own tiling (`GemmSpec::simt_tiling`) is tested in
/// tests/gpu_gemm.rs. Here the GEMMs must show XLA's tile beside ixmap's.
#[test]
fn default_launches_are_the_ones_xla_made() {
    let mut compared = Vec::new();
    let mut gemms = Vec::new();
    let mut problems = Vec::new();
    for (file, f) in fusions() {
        let Some((xb, xg)) = &f.xla_ncu_launch else {
            continue;
        };
        let what = format!("{}:{}", short(file), f.name);
        let Status::Ok(ours) = &f.launch else {
            problems.push(format!("{what}: no launch ({})", f.launch.detail()));
            continue;
        };
        if ours.starts_with("GEMM ") {
            let xla = f.xla_launch.as_deref().unwrap_or("");
            if !(ours.contains("ixmap's for f32 on CUDA cores") && xla.starts_with("Triton: ")) {
                problems.push(format!(
                    "{what}: `{ours}` and `{xla}`: not ixmap's tiling beside XLA's"
                ));
            }
            gemms.push(what);
            continue;
        }
        let xla = ncu_extent(xb).zip(ncu_extent(xg));
        match (ixmap_block_grid(ours), xla) {
            (Some(a), Some(b)) if a == b => compared.push(what),
            (a, b) => problems.push(format!(
                "{what}: ixmap `{ours}` {a:?}, XLA block {xb}, grid {xg} {b:?} (threads a block, blocks)"
            )),
        }
    }
    say(&format!(
        "xla dumps: {} default launches with XLA's threads a block and blocks under ncu: {}",
        compared.len(),
        compared.join(", ")
    ));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // every fusion of the H100 corpus that ncu saw XLA launch, the GEMMs apart
    assert!(
        compared.len() >= 35 - gemms.len() && compared.len() + gemms.len() >= 35,
        "only {} compared and {} GEMMs",
        compared.len(),
        gemms.len()
    );
}

#[test]
fn launch_extents_read_both_forms() {
    assert_eq!(
        ixmap_block_grid("row reduction, block 256, grid 2048, vector 2"),
        Some((256, 2048))
    );
    assert_eq!(
        ixmap_block_grid("GEMM tile 16x8x16, 2 warps, 1 stage (XLA's, from backend_config), grid 2048 x 32, block 64"),
        Some((64, 65536))
    );
    assert_eq!(ncu_extent("(128, 1, 1)"), Some(128));
    assert_eq!(ncu_extent("(4, 2, 1)"), Some(8));
    assert_eq!(ncu_extent("128"), None);
}

/// `dump::shrink` keeps a scaled-down copy an HLO computation in its own right: every
/// instruction passes its op's shape check (a bitcast's merged dimensions scale together),
/// the work is under the budget, and attributes that fix sizes (a slice's limits) are never
/// left inconsistent.
#[test]
fn shrink_scales_shapes_consistently() {
    let text = "HloModule m\n\
add {\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  ROOT s = f32[] add(x, y)\n}\n\
fused {\n  p = f32[16,64,64,32] parameter(0)\n\
  b = f32[16,4096,32] bitcast(p)\n  c = f32[] constant(0)\n\
  ROOT r = f32[16,32] reduce(b, c), dimensions={1}, to_apply=add\n}\n\
sliced {\n  p = f32[512,256] parameter(0)\n\
  ROOT s = f32[100,256] slice(p), slice={[0:100], [0:256]}\n}\n\
ENTRY main {\n  x = f32[16,64,64,32] parameter(0)\n\
  ROOT f = f32[16,32] fusion(x), kind=kInput, calls=fused\n}\n";
    let ws = dump::load_module(text).expect("loads");
    let fused = ws.module.computation("fused").unwrap();
    assert!(dump::work(fused) > 1 << 16);
    let (small, changed) = dump::shrink(fused, 1 << 16).expect("scales down");
    assert!(dump::work(&small) <= 1 << 16, "{changed}");
    for id in 0..small.instrs.len() {
        ixmap::hlo::ops::check(&small, id).unwrap_or_else(|e| panic!("{changed}: {e}"));
    }
    let p: i64 = small.instrs[0].dims().iter().product();
    let b: i64 = small.instrs[1].dims().iter().product();
    assert_eq!(p, b, "the bitcast keeps its element count ({changed})");
    // The slice's limits fix the sizes: whatever copy comes back passes the checks.
    let sliced = ws.module.computation("sliced").unwrap();
    if let Some((s, changed)) = dump::shrink(sliced, 1 << 10) {
        for id in 0..s.instrs.len() {
            ixmap::hlo::ops::check(&s, id).unwrap_or_else(|e| panic!("{changed}: {e}"));
        }
    }
}

/// A fusion timed by ixmap (`dump --bench` on a GPU) beside XLA's ncu time from the
/// corpus's CSV: the time line names both methods, since a batch of launches and one
/// kernel under Nsight Compute are not measured alike, and gives their ratio.
#[test]
fn the_time_line_names_both_methods() {
    let r = survey();
    let (m, i) = r
        .modules
        .iter()
        .find_map(|m| {
            let i = m.fusions.iter().position(|f| f.xla_time_us.is_some())?;
            Some((m, i))
        })
        .expect("a fusion with XLA's ncu time");
    let mut m = m.clone();
    let (xla, _) = m.fusions[i].xla_time_us.unwrap();
    m.fusions[i].ixmap_time_us = Some(2.0 * xla);
    let text = ixmap::render::dump::text(
        &DumpReport::new(vec![m], r.options.clone()),
        ixmap::render::Style::Plain,
    );
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("time: ixmap"))
        .unwrap_or_else(|| panic!("a time line in\n{text}"));
    assert!(line.contains("(bench: a batch of launches)"), "{line}");
    assert!(
        line.contains("(ncu") && line.contains("one kernel, caches flushed"),
        "{line}"
    );
    assert!(
        line.contains("ixmap / XLA 2.00 across the two methods"),
        "{line}"
    );
}
