//! `dump`: a survey of what XLA wrote with `--xla_dump_to=DIR --xla_dump_hlo_as_text` — the
//! first thing a user points ixmap at. For every module after optimizations, every fusion:
//! its kind and XLA's emitter, where in the user's source it came from (the stack-frame
//! tables), its output → input indexing (simplified), the launch ixmap would use beside
//! XLA's launch when the backend config prints one, the coalescing of each operand, and
//! whether ixmap emits it (CUDA and C) and verifies it (the CUDA text run on the CPU, every
//! element against the reference). Kernel times XLA measured, when the directory has them
//! (`xla-kernel-times-ncu.csv`, Nsight Compute's CSV), are shown beside each fusion.
//!
//! ```text
//! ixmap dump /tmp/dump          # every *after_optimizations.txt under it
//! module jit_layernorm (module_11916.jit_layernorm.sm_9.0a_gpu_after_optimizations.txt)
//!   fusion.4  kCustom __triton  f32[4096,1024]  models.py:12 (layernorm)
//!     operand 0 f32[1024]: (d0, d1) -> (d1) ...
//!     ixmap: row normalization, block 128, ...   XLA: Triton, 4 warps, tile 4x1024
//! ```
//!
//! The survey is analysis first: a fusion whose maps are known is indexed, launched and
//! analysed even when an op in it has no emitter yet; that is said in the emit column only.

use crate::gpu::spec::{KernelSpec, XlaTile};
use crate::hlo::parse::parse_hlo;
use crate::hlo::workspace::Workspace;
use crate::hlo::{Computation, Instr, InstrId};
use crate::syntax::{self, Diagnostic, StmtKind};
use std::path::{Path, PathBuf};

/// What to do besides indexing.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Emit each fusion for CUDA and C.
    pub emit: bool,
    /// Run the CUDA text on the CPU and check every element (implies `emit`).
    pub verify: bool,
    /// Time each kernel on the GPU (`bench device=gpu`), when one is found.
    pub bench: bool,
    /// Verify the C kernel too (compiled by the system compiler), not only the CUDA text.
    pub verify_c: bool,
    /// Verify only kernels of at most this many output elements (the reference interprets
    /// every element on one core); `None`: every kernel.
    pub verify_max_elements: Option<i64>,
    /// Verify only GEMMs of at most this many multiply-adds (the reference contracts in f64
    /// on one core); `None`: up to [`GEMM_C_MACS`].
    pub verify_max_macs: Option<f64>,
    /// Assemble each CUDA kernel (NVRTC, ptxas for `sm_90`) and report its registers and
    /// occupancy beside XLA's (implies `emit`).
    pub occupancy: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            emit: true,
            verify: true,
            bench: false,
            verify_c: true,
            verify_max_elements: None,
            verify_max_macs: None,
            occupancy: false,
        }
    }
}

/// ixmap's kernel as ptxas assembled it for `sm_90`, and what an SM holds of it.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelOccupancy {
    pub resources: crate::gpu::nvcc::KernelResources,
    pub occupancy: crate::gpu::occupancy::Occupancy,
    /// The launch's blocks (all three dimensions).
    pub grid: i64,
    /// Its SASS instructions, where cuobjdump is found (`gpu::nvcc::code_stats`).
    pub sass_instructions: Option<usize>,
}

/// The occupancy of `source`'s (first) kernel launched as `threads` threads a block and
/// `grid` blocks: NVRTC, then ptxas for `sm_90` (and its SASS count, with cuobjdump).
pub fn kernel_occupancy(source: &str, threads: i64, grid: i64) -> Result<KernelOccupancy, String> {
    if crate::gpu::nvcc::find_ptxas().is_none() || crate::gpu::nvcc::shared_nvrtc().is_none() {
        return Err("NVRTC and ptxas not found (scripts/test-all installs them)".into());
    }
    // One NVRTC compile for the resources and the SASS count.
    let stats = crate::gpu::nvcc::code_stats(source);
    let sass_instructions = stats.as_ref().and_then(|c| c.sass_instructions);
    let k = stats
        .and_then(|c| c.resources.into_iter().next())
        .ok_or_else(|| "NVRTC or ptxas rejected the kernel".to_string())?;
    Ok(KernelOccupancy {
        occupancy: k.occupancy(threads)?,
        resources: k,
        grid,
        sass_instructions,
    })
}

/// Whether a step worked, failed (with why), or was not tried (with why); a verification
/// may also be undetermined: the kernel's output differs from the reference where the HLO
/// leaves the value undetermined ([`MapError::Undetermined`]), neither wrong nor verified.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    Ok(String),
    Failed(String),
    Skipped(String),
    Undetermined(String),
}

impl Status {
    pub fn is_ok(&self) -> bool {
        matches!(self, Status::Ok(_))
    }
    pub fn detail(&self) -> &str {
        match self {
            Status::Ok(s) | Status::Failed(s) | Status::Skipped(s) | Status::Undetermined(s) => s,
        }
    }
    pub fn word(&self) -> &'static str {
        match self {
            Status::Ok(_) => "ok",
            Status::Failed(_) => "failed",
            Status::Skipped(_) => "skipped",
            Status::Undetermined(_) => "undetermined",
        }
    }
}

/// One operand's (or output's) maps.
#[derive(Clone, Debug)]
pub struct OperandIndexing {
    /// `output 1, operand 0` for a multi-output fusion, else `operand 0`.
    pub label: String,
    /// The parameter's shape.
    pub shape: String,
    /// Each distinct map, printed (simplified); empty: not read. `UNDEFINED` when unknown.
    pub maps: Vec<String>,
}

/// One operand's coalescing under ixmap's launch.
#[derive(Clone, Debug)]
pub struct OperandCoalescing {
    pub label: String,
    pub coalesced: bool,
    /// `12/8 sectors per warp load`
    pub detail: String,
}

#[derive(Clone, Debug)]
pub struct FusionReport {
    pub name: String,
    /// The fused computation.
    pub computation: String,
    /// `kLoop`, `kInput`, `kCustom`, with the backend kind when printed (`__triton`).
    pub kind: String,
    pub shape: String,
    /// The user's source line, from the stack-frame tables.
    pub location: Option<String>,
    pub indexing: Result<Vec<OperandIndexing>, String>,
    /// ixmap's launch for the fusion (`row reduction, block 128, grid 2048`).
    pub launch: Status,
    /// XLA's launch, as its backend config prints it.
    pub xla_launch: Option<String>,
    /// XLA's launch as Nsight Compute recorded it, `(block, grid)` as ncu prints them
    /// (`(128, 1, 1)`), whatever the backend config says (`xla-kernel-times-ncu.csv`).
    pub xla_ncu_launch: Option<(String, String)>,
    pub coalescing: Result<Vec<OperandCoalescing>, String>,
    pub emit_cuda: Status,
    pub emit_cpu: Status,
    pub verify: Status,
    /// XLA's registers and shared memory as Nsight Compute recorded them.
    pub xla_resources: Option<XlaResources>,
    /// ixmap's CUDA kernel's registers and shared memory (ptxas, `sm_90`) and the
    /// occupancy they give, when `occupancy=true` asked; or why there is none.
    pub occupancy: Option<Result<KernelOccupancy, String>>,
    /// XLA's kernel time in µs (median over the launches found), and how many launches.
    pub xla_time_us: Option<(f64, usize)>,
    /// ixmap's kernel time in µs on the GPU (`bench`).
    pub ixmap_time_us: Option<f64>,
    /// `bench`: the kernel timed (on the GPU when one is found, else the C kernel on the
    /// CPU) beside a copy of the same bytes, after its output verified; `None`: not asked.
    pub bench: Option<Status>,
    /// The CUDA source emitted (for compiling it elsewhere: the corpus test's NVRTC).
    pub cuda_source: Option<String>,
    /// When the fusion was past the verification budget at its own shapes and was verified
    /// instead as the same fused computation with its shapes scaled down: the sizes
    /// changed (`4096→512, 1024→128`).
    pub verified_scaled: Option<String>,
    /// Verification was not run at the fusion's own shapes because they are past the
    /// budget (the scaled-down copy is tried then).
    over_budget: bool,
}

impl FusionReport {
    /// Whether a step failed: indexing or the launch not found, a kernel not emitted, a
    /// verification or a benchmark that failed. A step skipped with its reason (not asked,
    /// past the budget, no compiler) is not a failure.
    pub fn failed(&self) -> bool {
        let failed = |s: &Status| matches!(s, Status::Failed(_));
        self.indexing.is_err()
            || failed(&self.launch)
            || failed(&self.emit_cuda)
            || failed(&self.emit_cpu)
            || failed(&self.verify)
            || self.bench.as_ref().is_some_and(failed)
    }
}

/// Instructions of the entry that run outside fusions as kernels or library calls.
#[derive(Clone, Debug)]
pub struct OtherKernel {
    pub name: String,
    pub opcode: String,
    /// `custom_call_target` for custom calls.
    pub target: Option<String>,
}

#[derive(Clone, Debug)]
pub struct ModuleReport {
    pub file: String,
    pub name: String,
    /// Why the file did not load (line:column and message), if it did not.
    pub error: Option<String>,
    pub fusions: Vec<FusionReport>,
    pub others: Vec<OtherKernel>,
}

#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub modules: usize,
    pub modules_loaded: usize,
    pub fusions: usize,
    pub indexed: usize,
    pub launched: usize,
    pub emitted_cuda: usize,
    pub emitted_cpu: usize,
    pub verified: usize,
    /// Of `verified`, those verified at scaled-down shapes (the rest at their own).
    pub verified_scaled: usize,
    pub verify_failed: usize,
    /// Fusions whose kernels' outputs the HLO leaves undetermined ([`Status::Undetermined`]).
    pub verify_undetermined: usize,
}

#[derive(Clone, Debug)]
pub struct DumpReport {
    pub modules: Vec<ModuleReport>,
    pub counts: Counts,
    pub options: Options,
}

impl DumpReport {
    pub fn new(modules: Vec<ModuleReport>, options: Options) -> DumpReport {
        let mut c = Counts {
            modules: modules.len(),
            ..Counts::default()
        };
        for m in &modules {
            if m.error.is_none() {
                c.modules_loaded += 1;
            }
            for f in &m.fusions {
                c.fusions += 1;
                c.indexed += f.indexing.is_ok() as usize;
                c.launched += f.launch.is_ok() as usize;
                c.emitted_cuda += f.emit_cuda.is_ok() as usize;
                c.emitted_cpu += f.emit_cpu.is_ok() as usize;
                c.verified += f.verify.is_ok() as usize;
                c.verified_scaled += (f.verify.is_ok() && f.verified_scaled.is_some()) as usize;
                c.verify_failed += matches!(f.verify, Status::Failed(_)) as usize;
                c.verify_undetermined += matches!(f.verify, Status::Undetermined(_)) as usize;
            }
        }
        DumpReport {
            modules,
            counts: c,
            options,
        }
    }
}

impl DumpReport {
    /// Whether the survey found a failure: a module that did not load, or a fusion with a
    /// failed step ([`FusionReport::failed`]). `ixmap dump` prints the whole survey and then
    /// exits 1, so a script can rely on its exit code.
    pub fn failed(&self) -> bool {
        self.modules
            .iter()
            .any(|m| m.error.is_some() || m.fusions.iter().any(FusionReport::failed))
    }
}

/// The module files under `paths`: a file as given; a directory's
/// `*after_optimizations.txt` files (XLA's optimized modules), sorted, or when it has none,
/// its `*.txt` files that start with `HloModule`.
pub fn module_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut all: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| format!("cannot read {}: {e}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file())
                .collect();
            all.sort();
            let after: Vec<PathBuf> = all
                .iter()
                .filter(|f| {
                    f.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.ends_with("after_optimizations.txt"))
                })
                .cloned()
                .collect();
            if after.is_empty() {
                out.extend(all.into_iter().filter(|f| {
                    f.extension().is_some_and(|e| e == "txt")
                        && std::fs::read_to_string(f)
                            .is_ok_and(|t| t.trim_start().starts_with("HloModule"))
                }));
            } else {
                out.extend(after);
            }
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            return Err(format!("{}: no such file or directory", p.display()));
        }
    }
    Ok(out)
}

/// Reads a module's text into a workspace of its own (its computations, stack frames).
pub fn load_module(src: &str) -> Result<Workspace, Diagnostic> {
    let mut ws = Workspace::new();
    for piece in syntax::split(src) {
        let stmt = syntax::parse_statement(src, &piece)?;
        match stmt.kind {
            StmtKind::Hlo(h) => {
                ws.define(parse_hlo(&h.text, h.span.start)?)?;
            }
            _ => {
                return Err(Diagnostic::at(
                    "not HLO text: a dump file holds one HLO module",
                    stmt.span,
                ))
            }
        }
    }
    Ok(ws)
}

/// `kCustom __triton`: the fusion kind and the backend's kind when the config names one.
fn kind_of(ins: &Instr) -> String {
    let kind = ins.attrs.kind.clone().unwrap_or_else(|| "kLoop".into());
    match ins.backend_config().and_then(|c| backend_kind(&c)) {
        Some(k) => format!("{kind} {k}"),
        None => kind,
    }
}

fn backend_kind(c: &serde_json::Value) -> Option<String> {
    c.pointer("/fusion_backend_config/kind")
        .or_else(|| c.pointer("/fusion_config/kind"))
        .and_then(|k| k.as_str())
        .map(str::to_string)
}

/// XLA's launch as the backend config prints it: Triton's warps, stages and output tile;
/// XLA:CPU's outer-dimension partitions.
pub fn xla_launch(ins: &Instr) -> Option<String> {
    let c = ins.backend_config()?;
    if let Some(b) = c.pointer("/fusion_backend_config/block_level_fusion_config") {
        let num = |k: &str| crate::hlo::json_int(b.get(k)?);
        let mut parts = Vec::new();
        if let Some(w) = num("num_warps") {
            parts.push(format!("{w} warps ({} threads)", w.saturating_mul(32)));
        }
        if let Some(tiles) = b.get("output_tiles").and_then(|t| t.as_array()) {
            for t in tiles {
                if let Some(sizes) = t.get("sizes").and_then(|s| s.as_array()) {
                    let s: Vec<String> = sizes
                        .iter()
                        .map(|x| {
                            x.as_str()
                                .map(str::to_string)
                                .unwrap_or_else(|| x.to_string())
                        })
                        .collect();
                    parts.push(format!("output tile {}", s.join("x")));
                }
            }
        }
        if let Some(s) = num("num_stages") {
            parts.push(format!("{s} stage{}", if s == 1 { "" } else { "s" }));
        }
        let kind = backend_kind(&c).unwrap_or_default();
        let who = if kind.contains("triton") {
            "Triton"
        } else {
            "block-level"
        };
        return Some(format!("{who}: {}", parts.join(", ")));
    }
    if let Some(p) = c
        .get("outer_dimension_partitions")
        .and_then(|p| p.as_array())
    {
        if !p.is_empty() {
            let s: Vec<String> = p
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| x.to_string())
                })
                .collect();
            return Some(format!("outer dimensions split in {} parts", s.join("x")));
        }
    }
    None
}

/// The source line of an instruction, from its metadata's `stack_frame_id`.
fn location(ws: &Workspace, ins: &Instr) -> Option<String> {
    let meta = ins.attrs.other("metadata")?;
    let id = crate::hlo::frames::stack_frame_id(meta)?;
    ws.module.frames.location(id).map(|l| l.to_string())
}

/// XLA's kernel times from Nsight Compute's CSV (`--csv --page raw`): kernel name → times
/// in µs, in launch order.
#[derive(Clone, Debug, Default)]
pub struct KernelTimes {
    pub launches: Vec<(String, f64)>,
    /// Each launch's block and grid as ncu prints them (`(128, 1, 1)`), when it does.
    pub shapes: Vec<Option<(String, String)>>,
    /// Each launch's registers and shared memory, when the CSV has them.
    pub resources: Vec<Option<XlaResources>>,
}

/// What Nsight Compute recorded of one of XLA's launches: threads a block, registers a
/// thread, shared memory a block (static and dynamic, without the system's reserve), and
/// the theoretical occupancy it computed (`sm__maximum_warps_avg_per_active_cycle`, resident
/// warps an SM) when the CSV has it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct XlaResources {
    pub threads: i64,
    pub registers: i64,
    pub shared_bytes: i64,
    pub ncu_warps: Option<f64>,
}

impl KernelTimes {
    /// Reads `xla-kernel-times-ncu.csv` (or any ncu raw CSV with `Kernel Name` and
    /// `gpu__time_duration.sum`); None when the file is missing or has neither column.
    pub fn read(path: &Path) -> Option<KernelTimes> {
        let text = std::fs::read_to_string(path).ok()?;
        let mut lines = text.lines();
        let header = csv_row(lines.next()?);
        let name_col = header.iter().position(|h| h == "Kernel Name")?;
        let time_col = header.iter().position(|h| h == "gpu__time_duration.sum")?;
        let block_col = header.iter().position(|h| h == "Block Size");
        let grid_col = header.iter().position(|h| h == "Grid Size");
        let units = csv_row(lines.next()?);
        let scale = match units.get(time_col).map(String::as_str) {
            Some("ns") => 1e-3,
            Some("us") | Some("usecond") => 1.0,
            Some("ms") | Some("msecond") => 1e3,
            _ => 1e-3,
        };
        let col = |name: &str| header.iter().position(|h| h == name);
        let threads_col = col("launch__block_size");
        let regs_col = col("launch__registers_per_thread");
        let static_col = col("launch__shared_mem_per_block_static");
        let dynamic_col = col("launch__shared_mem_per_block_dynamic");
        let warps_col = col("sm__maximum_warps_avg_per_active_cycle");
        let mut launches = Vec::new();
        let mut shapes = Vec::new();
        let mut resources = Vec::new();
        for l in lines {
            let row = csv_row(l);
            let (Some(name), Some(t)) = (row.get(name_col), row.get(time_col)) else {
                continue;
            };
            if let Ok(v) = t.replace(',', "").parse::<f64>() {
                launches.push((name.clone(), v * scale));
                let at = |c: Option<usize>| c.and_then(|c| row.get(c)).cloned();
                shapes.push(at(block_col).zip(at(grid_col)));
                let num = |c: Option<usize>| -> Option<f64> {
                    at(c).and_then(|v| v.replace(',', "").parse::<f64>().ok())
                };
                let int = |c: Option<usize>| num(c).map(|v| v as i64);
                resources.push(match (int(threads_col), int(regs_col)) {
                    (Some(threads), Some(registers)) => Some(XlaResources {
                        threads,
                        registers,
                        shared_bytes: int(static_col).unwrap_or(0) + int(dynamic_col).unwrap_or(0),
                        ncu_warps: num(warps_col),
                    }),
                    _ => None,
                });
            }
        }
        Some(KernelTimes {
            launches,
            shapes,
            resources,
        })
    }

    /// The times of `fusions` (a module's fusions in schedule order, kernel names): every
    /// place where the launches, restricted to those names, run exactly that sequence; the
    /// median of each fusion's times over those places, and how many there were.
    pub fn for_module(&self, fusions: &[String]) -> Vec<Option<(f64, usize)>> {
        self.matches(fusions)
            .into_iter()
            .map(|m| m.map(|m| (m.us, m.launches)))
            .collect()
    }

    /// [`KernelTimes::for_module`] with the block, grid and resources of the first match.
    pub fn matches(&self, fusions: &[String]) -> Vec<Option<KernelMatch>> {
        let want: Vec<String> = fusions.iter().map(|f| f.replace('.', "_")).collect();
        let mut none = vec![None; fusions.len()];
        if want.is_empty() {
            return none;
        }
        let seq: Vec<(usize, &(String, f64))> = self
            .launches
            .iter()
            .enumerate()
            .filter(|(_, (n, _))| want.contains(n))
            .collect();
        let mut per: Vec<Vec<f64>> = vec![Vec::new(); want.len()];
        let mut first: Vec<Option<usize>> = vec![None; want.len()];
        let mut i = 0;
        while i + want.len() <= seq.len() {
            if (0..want.len()).all(|k| seq[i + k].1 .0 == want[k]) {
                for k in 0..want.len() {
                    let (at, (_, t)) = seq[i + k];
                    per[k].push(*t);
                    first[k].get_or_insert(at);
                }
                i += want.len();
            } else {
                i += 1;
            }
        }
        for (k, mut v) in per.into_iter().enumerate() {
            let Some(at) = first[k] else { continue };
            v.sort_by(|a, b| a.total_cmp(b));
            none[k] = Some(KernelMatch {
                us: v[v.len() / 2],
                launches: v.len(),
                shape: self.shapes.get(at).cloned().flatten(),
                resources: self.resources.get(at).copied().flatten(),
            });
        }
        none
    }
}

/// One fusion's launches in the CSV: the median time in µs over `launches` of them, and
/// the block and grid (as ncu prints them) and resources of the first.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelMatch {
    pub us: f64,
    pub launches: usize,
    pub shape: Option<(String, String)>,
    pub resources: Option<XlaResources>,
}

/// One CSV line's fields (quoted fields may hold commas).
pub fn csv_row(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// The output → input maps of a fused computation, simplified and printed.
fn indexing(ws: &Workspace, comp: &Computation) -> Result<Vec<OperandIndexing>, String> {
    let module = &ws.module;
    let flat;
    let comp = if crate::hlo::inline::has_nesting(module, comp) {
        flat = crate::hlo::inline::flatten(module, comp);
        &flat
    } else {
        comp
    };
    let fi = crate::hlo::fusion::output_to_input(module, comp);
    let params = comp.parameters();
    let multi = fi.outputs.len() > 1;
    let mut out = Vec::new();
    for (o, per_param) in fi.outputs.iter().enumerate() {
        for (p, maps) in per_param.iter().enumerate() {
            let label = if multi {
                format!("output {o}, operand {p}")
            } else {
                format!("operand {p}")
            };
            let shape = params
                .get(p)
                .map(|&id| comp.instrs[id].shape.to_string())
                .unwrap_or_default();
            out.push(OperandIndexing {
                label,
                shape,
                maps: maps.iter().map(|m| m.to_string()).collect(),
            });
        }
    }
    Ok(out)
}

/// The survey of one fusion instruction `id` of the entry `entry`.
pub fn survey_fusion(
    ws: &Workspace,
    entry: &Computation,
    id: InstrId,
    opts: &Options,
) -> FusionReport {
    let ins = &entry.instrs[id];
    let fused = ws.module.fused_computation(ins);
    // XLA's tiling of a Triton fusion (its warps and output tile) goes with the spec: the
    // row normalization launch takes its warps per row and rows per block from it.
    let tile = XlaTile::of(ins);
    let mut r = FusionReport {
        name: ins.name.clone(),
        computation: ins.attrs.calls.clone().unwrap_or_default(),
        kind: kind_of(ins),
        shape: ins.shape.to_string(),
        location: location(ws, ins).or_else(|| fused.and_then(|c| location(ws, &c.instrs[c.root]))),
        indexing: Err(String::new()),
        launch: Status::Skipped(String::new()),
        xla_launch: xla_launch(ins),
        xla_ncu_launch: None,
        xla_resources: None,
        occupancy: None,
        coalescing: Err(String::new()),
        // What stays so says why: the step before did not succeed.
        emit_cuda: Status::Skipped("no launch".into()),
        emit_cpu: Status::Skipped("no launch".into()),
        verify: Status::Skipped("not emitted".into()),
        xla_time_us: None,
        ixmap_time_us: None,
        bench: None,
        cuda_source: None,
        verified_scaled: None,
        over_budget: false,
    };
    let Some(comp) = fused else {
        let why = format!(
            "the fused computation `{}` is not in the module",
            r.computation
        );
        r.indexing = Err(why.clone());
        r.launch = Status::Failed(why);
        return r;
    };
    r.indexing = indexing(ws, comp);
    // A fusion with a dot is a GEMM kernel's.
    match crate::gpu::gemm::for_name(ws, &ins.name) {
        Some(Ok(g)) => {
            survey_gemm(&g, opts, &mut r);
            verify_scaled(ws, comp, opts, &mut r, None);
            if opts.bench && r.emit_cpu.is_ok() {
                let (st, gpu_us) = bench_gemm(&g);
                r.bench = Some(st);
                r.ixmap_time_us = gpu_us;
            }
            return r;
        }
        Some(Err(e)) => {
            // Not a GEMM kernel (an epilogue that reduces the dot's rows): the fusion as an
            // ordinary kernel, the dot a reduction of products (no shared-memory tiles).
            if let Ok(mut spec) = crate::gpu::from_hlo::from_computation(&ws.module, comp) {
                spec.xla_tile = tile.clone();
                survey_spec(&spec, opts, &mut r);
                verify_scaled(ws, comp, opts, &mut r, tile);
                if let Status::Ok(l) = &r.launch {
                    r.launch = Status::Ok(format!(
                        "{l}; not a GEMM kernel ({e}): the dot is a reduction of products"
                    ));
                }
                return r;
            }
            r.launch = Status::Failed(e.clone());
            r.emit_cuda = Status::Failed(e.clone());
            r.emit_cpu = Status::Failed(e);
            r.verify = Status::Skipped("not emitted".into());
            return r;
        }
        None => {}
    }
    let spec = match crate::gpu::from_hlo::from_computation(&ws.module, comp) {
        Ok(mut s) => {
            s.xla_tile = tile.clone();
            s
        }
        Err(e) => {
            r.launch = Status::Failed(e.clone());
            r.coalescing = Err(e.clone());
            r.emit_cuda = Status::Failed(e.clone());
            r.emit_cpu = Status::Failed(e.clone());
            r.verify = Status::Skipped("not emitted".into());
            return r;
        }
    };
    survey_spec(&spec, opts, &mut r);
    verify_scaled(ws, comp, opts, &mut r, tile);
    r
}

/// What the reference interpreter's run of a computation costs, roughly: the elements of
/// every instruction, times the elements folded into each for reductions, windows, dots
/// and scatters (the largest operand's, capped at 2^20).
pub fn work(comp: &Computation) -> i64 {
    let mut w: i64 = 0;
    for ins in &comp.instrs {
        let n: i64 = elements(&ins.shape).max(1);
        let folded: i64 = match ins.opcode.as_str() {
            "reduce" | "reduce-window" | "dot" | "convolution" | "scatter" => ins
                .operands
                .iter()
                .map(|&o| elements(&comp.instrs[o].shape))
                .max()
                .unwrap_or(1),
            _ => 1,
        };
        w = w.saturating_add(n.saturating_mul(folded.clamp(1, 1 << 20)));
    }
    w
}

fn elements(s: &crate::hlo::Shape) -> i64 {
    match s {
        crate::hlo::Shape::Array { dims, .. } => {
            dims.iter().fold(1i64, |a, &d| a.saturating_mul(d.max(0)))
        }
        crate::hlo::Shape::Tuple(v) => v.iter().fold(0i64, |a, s| a.saturating_add(elements(s))),
        crate::hlo::Shape::Token => 0,
    }
}

fn map_dims(s: &mut crate::hlo::Shape, f: &std::collections::BTreeMap<i64, i64>) {
    match s {
        crate::hlo::Shape::Array { dims, .. } => {
            for d in dims {
                if let Some(&n) = f.get(d) {
                    *d = n;
                }
            }
        }
        crate::hlo::Shape::Tuple(v) => v.iter_mut().for_each(|s| map_dims(s, f)),
        crate::hlo::Shape::Token => {}
    }
}

fn sizes_of(s: &crate::hlo::Shape, out: &mut Vec<i64>) {
    match s {
        crate::hlo::Shape::Array { dims, .. } => {
            out.extend(dims.iter().copied().filter(|&d| d >= 2))
        }
        crate::hlo::Shape::Tuple(v) => v.iter().for_each(|s| sizes_of(s, out)),
        crate::hlo::Shape::Token => {}
    }
}

/// `comp` with its shapes scaled down until [`work`] is at most `budget`: every dimension
/// of one size gets one new size (halved, step by step, the largest first; with it, when
/// that alone does not check, every size that is a multiple of it, as a bitcast's merged
/// dimensions are: halved, or divided by 2 per factor of the size it holds). Each step keeps only copies whose every instruction passes its op's
/// own shape check, so the copy is an HLO computation in its own right (its attributes
/// unchanged: a slice's limits or a pad's widths that no longer fit refuse the step).
/// `None` when a computation has an op ixmap does not check, a non-scalar constant, or no
/// copy gets under the budget. Also returns the sizes changed, `old→new`.
pub fn shrink(comp: &Computation, budget: i64) -> Option<(Computation, String)> {
    use std::collections::BTreeMap;
    let checkable = comp.instrs.iter().all(|i| {
        (crate::hlo::ops::family(&i.opcode).is_some() || i.opcode == "parameter")
            && (i.opcode != "constant" || elements(&i.shape) <= 1)
    });
    if !checkable {
        return None;
    }
    let mut sizes = Vec::new();
    for i in &comp.instrs {
        sizes_of(&i.shape, &mut sizes);
    }
    sizes.sort_unstable();
    sizes.dedup();
    let valid =
        |c: &Computation| (0..c.instrs.len()).all(|id| crate::hlo::ops::check(c, id).is_ok());
    let apply = |f: &BTreeMap<i64, i64>| {
        let mut c = comp.clone();
        for i in &mut c.instrs {
            map_dims(&mut i.shape, f);
        }
        c
    };
    let mut f: BTreeMap<i64, i64> = sizes.iter().map(|&v| (v, v)).collect();
    let mut cur = comp.clone();
    let mut cost = work(&cur);
    for _ in 0..256 {
        if cost <= budget {
            break;
        }
        let mut order = sizes.clone();
        order.sort_by_key(|v| std::cmp::Reverse(f[v]));
        let mut moved = false;
        'search: for &v in &order {
            if f[&v] < 2 || f[&v] % 2 != 0 {
                continue;
            }
            // 0: `v` alone; 1: with every multiple of it halved; 2: with every multiple
            // divided by 2 per factor `v` it holds (a bitcast that merges three dimensions
            // of size `v` into one).
            for how in 0..3 {
                let mut g = f.clone();
                g.insert(v, f[&v] / 2);
                if how > 0 {
                    let mut changed = false;
                    for &w in &sizes {
                        if w <= v || w % v != 0 {
                            continue;
                        }
                        let mut e = 1u32;
                        if how == 2 {
                            let mut q = w / v;
                            while q % v == 0 {
                                q /= v;
                                e += 1;
                            }
                            changed |= e > 1;
                        } else {
                            changed = true;
                        }
                        let div = 1i64 << e.min(62);
                        if g[&w] % div == 0 {
                            g.insert(w, g[&w] / div);
                        }
                    }
                    if !changed {
                        continue;
                    }
                }
                let c = apply(&g);
                let w = work(&c);
                if w < cost && valid(&c) {
                    f = g;
                    cur = c;
                    cost = w;
                    moved = true;
                    break 'search;
                }
            }
        }
        if !moved {
            break;
        }
    }
    if cost > budget {
        return None;
    }
    let changed: Vec<String> = f
        .iter()
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("{a}→{b}"))
        .collect();
    Some((cur, changed.join(", ")))
}

/// The interpreter work of a scaled-down copy verified in place of a fusion past the
/// budget: small enough for the reference on one core in a CI run.
pub const SCALED_WORK: i64 = 1 << 19;

/// A fusion past this run's verification budget: verified as the same fused computation
/// with its shapes scaled down ([`shrink`]), said in the verify column, when that copy
/// emits.
/// `tile`: the fusion's XLA tiling, given to the scaled-down copy's spec too (its launch
/// takes the tile's warps per row where the tile still fits the smaller rows).
fn verify_scaled(
    ws: &Workspace,
    comp: &Computation,
    opts: &Options,
    r: &mut FusionReport,
    tile: Option<XlaTile>,
) {
    if !r.over_budget || !opts.verify {
        return;
    }
    let flat;
    let comp = if crate::hlo::inline::has_nesting(&ws.module, comp) {
        flat = crate::hlo::inline::flatten(&ws.module, comp);
        &flat
    } else {
        comp
    };
    let skipped = r.verify.detail().to_string();
    let Some((small, changed)) = shrink(comp, SCALED_WORK) else {
        r.verify = Status::Skipped(format!(
            "{skipped}; its shapes do not scale down (an op whose attributes fix its sizes)"
        ));
        return;
    };
    let mut s = FusionReport {
        name: r.name.clone(),
        computation: r.computation.clone(),
        kind: r.kind.clone(),
        shape: String::new(),
        location: None,
        indexing: Err(String::new()),
        launch: Status::Skipped(String::new()),
        xla_launch: None,
        xla_ncu_launch: None,
        xla_resources: None,
        occupancy: None,
        coalescing: Err(String::new()),
        // What stays so says why: the step before did not succeed.
        emit_cuda: Status::Skipped("no launch".into()),
        emit_cpu: Status::Skipped("no launch".into()),
        verify: Status::Skipped("not emitted".into()),
        xla_time_us: None,
        ixmap_time_us: None,
        bench: None,
        cuda_source: None,
        verified_scaled: None,
        over_budget: false,
    };
    let sopts = Options {
        bench: false,
        verify_max_elements: None,
        verify_max_macs: None,
        ..*opts
    };
    let dots = small.instrs.iter().filter(|i| i.opcode == "dot").count();
    let gemm = match dots {
        1 => crate::gpu::gemm::for_computation(&ws.module, &small),
        _ => None,
    };
    match gemm {
        Some(Ok(g)) => survey_gemm(&g, &sopts, &mut s),
        _ => match crate::gpu::from_hlo::from_computation(&ws.module, &small) {
            Ok(mut spec) => {
                spec.xla_tile = tile;
                survey_spec(&spec, &sopts, &mut s)
            }
            Err(e) => s.verify = Status::Skipped(format!("the scaled-down copy: {e}")),
        },
    }
    let at = format!(
        "at scaled-down shapes ({changed}; output {})",
        small.instrs[small.root].shape
    );
    r.verify = match s.verify {
        Status::Ok(d) => {
            r.verified_scaled = Some(changed);
            Status::Ok(format!("{at}: {d}"))
        }
        Status::Failed(d) => Status::Failed(format!("{at}: {d}")),
        Status::Skipped(d) => Status::Skipped(format!("{skipped}; {at}: {d}")),
        Status::Undetermined(d) => Status::Undetermined(format!("{at}: {d}")),
    };
}

/// Multiply-adds past which a GEMM is not verified by running its CUDA text on the CPU
/// (fibers, one OS thread), and past which its C kernel and the reference are not run
/// either: the reference contracts in f64 on one core.
const GEMM_CUDA_ON_CPU_MACS: f64 = (1u64 << 27) as f64;
pub const GEMM_C_MACS: f64 = (1u64 << 30) as f64;

fn survey_gemm(g: &crate::gpu::gemm::GemmSpec, opts: &Options, r: &mut FusionReport) {
    use crate::gpu::emit::gemm as emit;
    let (tiling, split, origin) = match g.tiling(None) {
        Ok(t) => t,
        Err(e) => {
            r.launch = Status::Failed(e);
            return;
        }
    };
    let c = emit::Config {
        tiling,
        split,
        naive: false,
    };
    let ([gx, gy], block) = emit::launch_dims(g, &c.tiling);
    r.launch = Status::Ok(format!(
        "GEMM {} ({origin}), grid {gx} x {gy}, block {block}",
        c.tiling.describe()
    ));
    r.coalescing = Err("a GEMM stages its tiles through shared memory".into());
    if !opts.emit && !opts.verify && !opts.occupancy {
        r.emit_cuda = Status::Skipped("not asked".into());
        r.emit_cpu = Status::Skipped("not asked".into());
        r.verify = Status::Skipped("not asked".into());
        return;
    }
    r.emit_cuda = match emit::cuda(g, &c) {
        Ok((e, _)) => {
            let n = e.source.lines().count();
            if opts.occupancy {
                r.occupancy = Some(kernel_occupancy(&e.source, block, gx.saturating_mul(gy)));
            }
            r.cuda_source = Some(e.source);
            Status::Ok(format!("{n} lines"))
        }
        Err(e) => Status::Failed(e.to_string()),
    };
    r.emit_cpu = match emit::cpu(g, &c) {
        Ok(e) => Status::Ok(format!("{} lines", e.source.lines().count())),
        Err(e) => Status::Failed(e.to_string()),
    };
    if !opts.verify {
        r.verify = Status::Skipped("not asked".into());
        return;
    }
    let macs = g.flops() / 2.0;
    let budget = opts.verify_max_macs.unwrap_or(GEMM_C_MACS).min(GEMM_C_MACS);
    if macs > budget {
        r.over_budget = true;
        r.verify = Status::Skipped(format!(
            "{:.2} G multiply-adds: past this run's verification budget ({:.2} G); `check {}` runs it",
            macs / 1e9,
            budget / 1e9,
            r.name
        ));
        return;
    }
    let c_result = crate::gpu::bench::gemm::check_c(g, &c);
    r.verify = match c_result {
        Err(e) => Status::Failed(format!("the C kernel: {e}")),
        Ok(w) if macs > GEMM_CUDA_ON_CPU_MACS => Status::Ok(format!(
            "the C kernel: every element within its bound of the reference (largest error {:.0}% of it); the CUDA text is not run on the CPU past {:.2} G multiply-adds",
            w * 100.0,
            GEMM_CUDA_ON_CPU_MACS / 1e9
        )),
        Ok(w) => match crate::gpu::bench::gemm::check_cuda_on_cpu(g, &c, false) {
            Err(e) => Status::Failed(format!("CUDA on the CPU: {e}")),
            Ok((bits, w2)) => Status::Ok(format!(
                "the CUDA kernel on the CPU ({bits}-bit indices) and the C kernel: every element within its bound of the reference (largest error {:.0}% of it)",
                w.max(w2) * 100.0
            )),
        },
    };
}

fn survey_spec(spec: &KernelSpec, opts: &Options, r: &mut FusionReport) {
    use crate::gpu::launch;
    // An output with no elements has nothing to compute: no kernel is launched (nor by
    // XLA), which is not a failure.
    if spec
        .outputs()
        .iter()
        .all(|t| t.num_elements().is_ok_and(|n| n == 0))
    {
        r.launch = Status::Skipped("the output has no elements: nothing to launch".into());
        r.emit_cuda = Status::Skipped("no launch".into());
        r.emit_cpu = Status::Skipped("no launch".into());
        r.verify = Status::Skipped("no elements".into());
        return;
    }
    // ixmap's default launch: XLA's rules for an H100 (the kind of card the shared dumps
    // were timed on), as `threads`, `emit` and `bench` use it.
    let l = match launch::choose_default(spec, None, launch::DeviceLimits::H100) {
        Ok((l, _)) => l,
        Err(e) => {
            r.launch = Status::Failed(e.to_string());
            return;
        }
    };
    r.launch = Status::Ok(crate::session::cmd_gpu::describe(&l));
    // Offsets read at run time (dynamic slices, gathers, scatters): as `coalescing` does,
    // the analysis takes one value per warp, each a load of its own (every value of a small
    // range, a sample of a large one), and the detail says so.
    r.coalescing = crate::gpu::coalescing::analyse(spec, &l)
        .map(|rep| {
            rep.operands
                .iter()
                .map(|o| {
                    let at_run_time = o.assumed.iter().any(|a| a.runtime);
                    OperandCoalescing {
                        label: o.label.clone(),
                        coalesced: o.coalesced,
                        detail: format!(
                            "{}/{} sectors{}",
                            o.sectors,
                            o.ideal_sectors,
                            if at_run_time {
                                ", run-time starts sampled"
                            } else {
                                ""
                            }
                        ),
                    }
                })
                .collect()
        })
        .map_err(|e| e.to_string());
    if !opts.emit && !opts.verify && !opts.occupancy {
        r.emit_cuda = Status::Skipped("not asked".into());
        r.emit_cpu = Status::Skipped("not asked".into());
        r.verify = Status::Skipped("not asked".into());
        return;
    }
    r.emit_cuda = match crate::gpu::emit::cuda::emit(spec, &l, false) {
        Ok(e) => {
            let n = e.source.lines().count();
            if opts.occupancy {
                let (threads, grid) = l.size();
                r.occupancy = Some(kernel_occupancy(&e.source, threads, grid));
            }
            r.cuda_source = Some(e.source);
            Status::Ok(format!("{n} lines"))
        }
        Err(e) => Status::Failed(e.to_string()),
    };
    r.emit_cpu = match crate::gpu::emit::cpu::emit(spec, false) {
        Ok(e) => Status::Ok(format!("{} lines", e.source.lines().count())),
        Err(e) => Status::Failed(e.to_string()),
    };
    let elements: i64 = spec
        .outputs()
        .iter()
        .map(|t| t.num_elements().unwrap_or(i64::MAX))
        .fold(0i64, |a, b| a.saturating_add(b));
    r.verify = if !opts.verify {
        Status::Skipped("not asked".into())
    } else if !r.emit_cuda.is_ok() {
        Status::Skipped("not emitted".into())
    } else if let Some(max) = opts.verify_max_elements.filter(|&m| elements > m) {
        r.over_budget = true;
        Status::Skipped(format!(
            "{elements} output elements: past this run's verification budget of {max}"
        ))
    } else {
        // Both kernels on the same inputs: the CUDA text run on the CPU, and the C kernel.
        // One reference run shared by both checks.
        let also_c = r.emit_cpu.is_ok() && opts.verify_c;
        match crate::gpu::cuda_cpu::check_cuda_and_c(spec, &l, also_c) {
            Err((who, e @ crate::MapError::Undetermined(_))) => Status::Undetermined(format!("{who}: {e}")),
            Err((who, e)) => Status::Failed(format!("{who}: {e}")),
            Ok(bits) if !also_c => Status::Ok(format!(
                "the CUDA kernel ran on the CPU ({bits}-bit indices); every element matches the reference"
            )),
            Ok(bits) => Status::Ok(format!(
                "the CUDA kernel on the CPU ({bits}-bit indices) and the C kernel: every element matches the reference"
            )),
        }
    };
    if opts.bench {
        let (st, gpu_us) = if !r.emit_cuda.is_ok() && !r.emit_cpu.is_ok() {
            (Status::Skipped("not emitted".into()), None)
        } else {
            bench_spec(spec, &l)
        };
        r.bench = Some(st);
        r.ixmap_time_us = gpu_us;
    }
}

fn us(t_s: f64) -> String {
    let u = t_s * 1e6;
    if u >= 1000.0 {
        format!("{:.2} ms", u / 1000.0)
    } else {
        format!("{u:.1} µs")
    }
}

/// The kernel timed under ixmap's default launch — on the GPU when a CUDA device is found,
/// else the C kernel on the CPU — beside a copy of the same bytes, when its output
/// verifies; with the GPU time in µs (to set beside XLA's).
fn bench_spec(spec: &KernelSpec, l: &crate::gpu::launch::Launch) -> (Status, Option<f64>) {
    use crate::gpu::bench;
    let gpu = bench::cuda::available().is_ok();
    let opts = bench::Options {
        device: if gpu {
            bench::Device::Gpu
        } else {
            bench::Device::Cpu
        },
        config: l.config,
        reps: 5,
        warmups: 1,
        ..Default::default()
    };
    let out = match bench::run(spec, &opts, false, false) {
        Ok(o) => o,
        Err(e) => return (Status::Failed(e.to_string()), None),
    };
    bench_status(&out, gpu)
}

/// A GEMM fusion timed under its tiling (XLA's when printed), as [`bench_spec`].
fn bench_gemm(g: &crate::gpu::gemm::GemmSpec) -> (Status, Option<f64>) {
    use crate::gpu::bench;
    let (tiling, split, origin) = match g.tiling(None) {
        Ok(t) => t,
        Err(e) => return (Status::Failed(e), None),
    };
    let c = crate::gpu::emit::gemm::Config {
        tiling,
        split,
        naive: false,
    };
    let gpu = bench::cuda::available().is_ok();
    let req = bench::gemm::Request {
        on_gpu: gpu,
        reps: 5,
        threads: 0,
        origin,
    };
    match bench::gemm::bench(g, &c, &req) {
        Ok(rep) => bench_status(&rep.outcome, gpu),
        Err(e) => (Status::Failed(e.to_string()), None),
    }
}

fn bench_status(out: &crate::gpu::bench::Outcome, gpu: bool) -> (Status, Option<f64>) {
    let Some(m) = out.variants.first() else {
        return (Status::Failed("no kernel was timed".into()), None);
    };
    if !m.verified {
        return (
            Status::Failed("the timed kernel's output does not match the reference".into()),
            None,
        );
    }
    let t = m.timing.median_s;
    (
        Status::Ok(format!(
            "{} on {}: {} (median of {}), a copy of the same bytes {} ({:.0}% of the copy's bandwidth)",
            if gpu { "the CUDA kernel" } else { "the C kernel" },
            out.device,
            us(t),
            m.timing.samples.len().max(1),
            us(out.copy.median_s),
            out.copy_pct(&m.timing)
        )),
        gpu.then_some(t * 1e6),
    )
}

/// Surveys one module file.
pub fn survey_file(path: &Path, opts: &Options, times: Option<&KernelTimes>) -> ModuleReport {
    let file = path.display().to_string();
    let mut m = ModuleReport {
        file: file.clone(),
        name: String::new(),
        error: None,
        fusions: Vec::new(),
        others: Vec::new(),
    };
    let text = match std::fs::read(path)
        .map_err(|e| e.to_string())
        .and_then(syntax::decode_utf8)
        .map(syntax::without_bom)
    {
        Ok(t) => t,
        Err(e) => {
            m.error = Some(format!("cannot read {file}: {e}"));
            return m;
        }
    };
    let ws = match load_module(&text) {
        Ok(ws) => ws,
        Err(d) => {
            m.error = Some(format!("{file}: {}", d.render(&text)));
            m.name = header_name(&text).unwrap_or_default();
            return m;
        }
    };
    survey_workspace(&ws, m, opts, times)
}

/// The name on a module's `HloModule NAME, ...` line, for a module that did not load.
fn header_name(text: &str) -> Option<String> {
    let line = text
        .lines()
        .map(str::trim_start)
        .find(|l| l.starts_with("HloModule "))?;
    let name = line["HloModule ".len()..]
        .trim_start()
        .split(|c: char| c == ',' || c.is_whitespace())
        .next()?;
    (!name.is_empty()).then(|| name.to_string())
}

/// Surveys the module a workspace holds (a file's, or a session's own), into `m`.
pub fn survey_workspace(
    ws: &Workspace,
    mut m: ModuleReport,
    opts: &Options,
    times: Option<&KernelTimes>,
) -> ModuleReport {
    let file = m.file.clone();
    m.name = ws.module.name.clone();
    let Some(entry) = ws.module.entry() else {
        m.error = Some(format!("{file}: the module has no ENTRY computation"));
        return m;
    };
    for (id, ins) in entry.instrs.iter().enumerate() {
        match ins.opcode.as_str() {
            "fusion" => m.fusions.push(survey_fusion(ws, entry, id, opts)),
            "custom-call" | "convolution" | "dot" | "sort" | "all-reduce" | "send" | "recv"
            | "while" | "conditional" | "call" => m.others.push(OtherKernel {
                name: ins.name.clone(),
                opcode: ins.opcode.clone(),
                target: ins
                    .attrs
                    .other("custom_call_target")
                    .map(|v| v.trim_matches('"').to_string()),
            }),
            _ => {}
        }
    }
    if let Some(t) = times {
        let names: Vec<String> = m.fusions.iter().map(|f| f.name.clone()).collect();
        for (f, t) in m.fusions.iter_mut().zip(t.matches(&names)) {
            let Some(KernelMatch {
                us,
                launches: n,
                shape,
                resources,
            }) = t
            else {
                continue;
            };
            f.xla_time_us = Some((us, n));
            f.xla_resources = resources;
            // The launch XLA made, as ncu saw it (shown where the config printed none).
            if let Some((block, grid)) = shape {
                if f.xla_launch.is_none() {
                    f.xla_launch = Some(format!("block {block}, grid {grid} (ncu)"));
                }
                f.xla_ncu_launch = Some((block, grid));
            }
        }
    }
    m
}

/// Surveys every module under `paths`; `progress(done, total, file)` after each file.
pub fn survey(
    paths: &[PathBuf],
    opts: &Options,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<DumpReport, String> {
    let files = module_files(paths)?;
    if files.is_empty() {
        return Err(format!(
            "no HLO module files under {}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut times_of: Vec<(PathBuf, Option<KernelTimes>)> = Vec::new();
    for f in &files {
        let dir = f.parent().map(Path::to_path_buf).unwrap_or_default();
        if !times_of.iter().any(|(d, _)| d == &dir) {
            let t = KernelTimes::read(&dir.join("xla-kernel-times-ncu.csv"));
            times_of.push((dir, t));
        }
    }
    let times_for = |f: &Path| {
        let dir = f.parent().map(Path::to_path_buf).unwrap_or_default();
        times_of
            .iter()
            .find(|(d, _)| d == &dir)
            .and_then(|(_, t)| t.as_ref())
    };
    // Modules are independent: surveyed by a few threads (each verification compiles and
    // runs kernels), reported in file order. Benchmarks on the GPU run one at a time.
    let workers = if opts.bench {
        1
    } else {
        std::thread::available_parallelism().map_or(2, |n| n.get().min(4))
    };
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut slots: Vec<Option<ModuleReport>> = vec![None; files.len()];
    std::thread::scope(|sc| {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, ModuleReport)>();
        let (files, next, times_for) = (&files, &next, &times_for);
        let worker = |tx: std::sync::mpsc::Sender<(usize, ModuleReport)>| {
            move || loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(f) = files.get(k) else { break };
                if crate::interrupted() {
                    break;
                }
                let m = survey_file(f, opts, times_for(f));
                if tx.send((k, m)).is_err() {
                    break;
                }
            }
        };
        // A deep fusion recurses deeply, so each worker gets `crate::STACK_BYTES` of stack;
        // where no such thread can be made, this thread does the work.
        let started = (0..workers)
            .filter(|_| {
                std::thread::Builder::new()
                    .stack_size(crate::STACK_BYTES)
                    .spawn_scoped(sc, worker(tx.clone()))
                    .is_ok()
            })
            .count();
        if started == 0 {
            worker(tx.clone())();
        }
        drop(tx);
        let mut done = 0;
        for (k, m) in rx {
            done += 1;
            progress(done, files.len(), &files[k].display().to_string());
            slots[k] = Some(m);
        }
    });
    let modules: Vec<ModuleReport> = slots.into_iter().flatten().collect();
    Ok(DumpReport::new(modules, *opts))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_module_that_does_not_load_is_named_from_its_header() {
        let m = super::header_name("HloModule jit_f, is_scheduled=true\nbad");
        assert_eq!(m.as_deref(), Some("jit_f"));
        assert_eq!(super::header_name("  HloModule m\n").as_deref(), Some("m"));
        assert_eq!(super::header_name("f {\n}\n"), None);
    }
    use super::*;

    #[test]
    fn csv_fields_keep_quoted_commas() {
        assert_eq!(
            csv_row(r#""0","a, b","1,234""#),
            vec!["0".to_string(), "a, b".into(), "1,234".into()]
        );
    }

    #[test]
    fn kernel_times_match_a_module_by_its_sequence() {
        let t = KernelTimes {
            launches: vec![
                ("x".into(), 1.0),
                ("loop_add_fusion".into(), 5.0),
                ("input_reduce_fusion_1".into(), 10.0),
                ("input_reduce_fusion".into(), 20.0),
                ("loop_add_fusion".into(), 30.0),
                ("loop_add_fusion".into(), 7.0),
            ],
            shapes: vec![],
            resources: vec![],
        };
        let got = t.for_module(&[
            "input_reduce_fusion.1".into(),
            "input_reduce_fusion".into(),
            "loop_add_fusion".into(),
        ]);
        assert_eq!(got, vec![Some((10.0, 1)), Some((20.0, 1)), Some((30.0, 1))]);
        // A one-fusion module matches every launch of its kernel: the median of three.
        assert_eq!(
            t.for_module(&["loop_add_fusion".into()]),
            vec![Some((7.0, 3))]
        );
    }
}
