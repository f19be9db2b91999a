//! The compile sweep (issue 19): every computation and instruction defined in
//! `sessions/**/*.ixm`, and the specs of the GPU tests, emitted with every launch mapping
//! that applies, simplified and naive, and compiled by the real compilers with zero errors
//! and zero warnings:
//!
//! - CUDA: NVIDIA's NVRTC for `compute_80` and `compute_90`, then ptxas for `sm_80` and
//!   `sm_90` (both from PyPI wheels that `scripts/test-all` installs into `target/venv`; see
//!   `src/gpu/nvcc.rs` for where they are looked for). Without NVRTC the test says so loudly
//!   and skips, except under `CI=true`, where it fails.
//! - CPU: the host C compiler with `-O1 -Wall -Werror` (`-O1` for the warnings that need
//!   data flow, such as a variable read uninitialized).
//!
//! Emission refusals (fusions the adapter or an emitter cannot take) are printed by reason,
//! and their number may only go down ([`MAX_REFUSED`]).

#[path = "common/gpu_specs.rs"]
mod specs;

use ixmap::gpu::emit::{self, Emitted};
use ixmap::gpu::nvcc::{self, Nvrtc};
use ixmap::gpu::spec::KernelSpec;
use ixmap::gpu::sweep::{self, Found};
use ixmap::hlo::workspace::Target;
use ixmap::session::Session;
use ixmap::syntax::{self, StmtKind};
use std::collections::HashSet;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::OnceLock;
use std::time::Instant;

/// Names in `sessions/` the adapter refuses today (ops without a kernel model, tuple roots
/// XLA does not fuse, element types without kernels, reducers a transcript never defines,
/// ...; lone parameters are inputs, not kernels, and are not counted). Lower it when a
/// refusal goes away; never raise it to make a new refusal pass. (100 when lone parameters
/// stopped counting: 375 names were refused before, 275 of them lone parameters; 55 once
/// ops with no emitter became opaque nodes the analyses take, issue 27; 56 when a new
/// input arrived that no emitter takes yet: the variadic scatter of sessions/hlo/scatter.ixm,
/// whose indexing is built but whose emission is open, issue 32 item 1. Not a regression:
/// every input refused before is refused no more often. 55 when a module's ENTRY
/// computation that launches fusions stopped counting, issue 29: the commands refuse it by
/// name and list its fusions. 57 with issue 32's coalescing transcripts, which analyse two
/// tuple roots whose outputs differ in element count — `coalescing-outputs:t` and
/// `reduction-groups:t` — refused for emission by XLA's rule, with that reason. 62 with
/// five new inputs written to be refused, not regressions: `hlo/reducers.ixm`'s reductions
/// `r1` and `r2` and their instructions `s`, whose reducers compute `add(a, a)` and
/// `subtract(b, a)` (once emitted as a sum and a fold, wrongly), and
/// `errors/hlo-calls.ixm`'s `outer`, a computation whose root is a fusion.)
const MAX_REFUSED: usize = 62;

/// Kernels per NVRTC program: one program per batch is much faster than one per kernel.
const BATCH: usize = 40;

/// Unbuffered, uncaptured output: the test harness captures `println!`, and the sweep's
/// counts and refusals should be read in every run.
fn say(s: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{s}");
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

// The replay of the transcripts' HLO statements (commands skipped, so the sweep never
// benchmarks anything): after each one, every name it mentions that now resolves is adapted,
// so a name redefined later in the file is swept in each of its meanings. Test support: it
// drives the interpreter, so it lives here, not in the library below it.

fn words(text: &str) -> HashSet<&str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Replays the HLO statements of one transcript (`label` names it in origins).
fn sweep_transcript(label: &str, src: &str, found: &mut Found) {
    let Ok(t) = ixmap::transcript::Transcript::parse(src) else {
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
fn sweep_input(label: &str, input: &str, session: &mut Session, found: &mut Found) {
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
            // Nor is a module's ENTRY computation that launches fusions: the commands refuse
            // it by name and list its fusions, which are swept by their own names.
            if matches!(session.hlo.resolve(name),
                Some(Target::Computation(c)) if c.is_entry && c.instrs.iter().any(|i| i.opcode == "fusion"))
            {
                continue;
            }
            match sweep::spec_for(&session.hlo, name) {
                Some(Ok(spec)) => found.add(format!("{label}:{name}"), spec),
                // A dot fusion is a GEMM (`gpu::gemm`, compiled in tests/gpu_gemm.rs).
                Some(Err(_))
                    if matches!(ixmap::gpu::gemm::for_name(&session.hlo, name), Some(Ok(_))) => {}
                Some(Err(e)) => found.refuse(format!("{label}:{name}"), &e),
                None => {}
            }
        }
    }
}

/// Every `.ixm` transcript under `dir`, swept.
fn sweep_sessions(dir: &std::path::Path) -> Found {
    let mut found = Found::default();
    for f in ixmap::transcript::collect_files(&[dir.to_path_buf()]).expect("the folder exists") {
        let Ok(src) = std::fs::read_to_string(&f) else {
            continue;
        };
        let label = f
            .strip_prefix(dir)
            .unwrap_or(&f)
            .to_string_lossy()
            .trim_end_matches(".ixm")
            .to_string();
        // Its computations nest fusions eight deep to pass the depth limit in a few lines:
        // nothing there is a kernel (fusions in fusions have no emitter), nor meant to be.
        if label == "errors/hlo-depth" {
            continue;
        }
        sweep_transcript(&label, &src, &mut found);
    }
    found
}

fn found() -> &'static Found {
    static F: OnceLock<Found> = OnceLock::new();
    F.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sessions");
        let mut f = sweep_sessions(&dir);
        for spec in [
            specs::reshape_add(3, 5, 8),
            specs::reshape_add_plain(4, 6, 8),
            specs::transpose(33, 70),
            specs::broadcast_mul(9, 13),
            specs::reduce(7, 45, true),
            specs::reduce(45, 7, false),
        ] {
            f.add(format!("tests:{}", spec.name), spec);
        }
        f
    })
}

fn report_refusals(f: &Found) -> usize {
    let n: usize = f.refused.values().map(Vec::len).sum();
    say(&format!(
        "sweep: {} distinct kernels specs from sessions/ and the tests; {n} names refused:",
        f.specs.len()
    ));
    for (why, who) in &f.refused {
        let shown: Vec<&str> = who.iter().take(4).map(String::as_str).collect();
        say(&format!(
            "  {:>3} × {why}   (e.g. {}{})",
            who.len(),
            shown.join(", "),
            if who.len() > 4 { ", …" } else { "" }
        ));
    }
    n
}

/// One emitted kernel and where it came from.
struct Kernel {
    origin: String,
    emitted: Emitted,
}

fn cuda_kernels(f: &Found) -> (Vec<Kernel>, Vec<String>) {
    let mut out = Vec::new();
    let mut refused = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (origin, spec) in &f.specs {
        for (label, launch) in sweep::launches(spec) {
            let launch = match launch {
                Ok(l) => l,
                Err(e) => {
                    refused.push(format!("{origin} {label}: {e}"));
                    continue;
                }
            };
            // Naive index arithmetic with the plain mappings; their vector and unroll
            // forms only simplified (the naive form adds no construct there).
            let modes: &[bool] = if label.contains("unroll") {
                &[false]
            } else {
                &[false, true]
            };
            for &naive in modes {
                let what = format!("{origin} {label}{}", if naive { " naive" } else { "" });
                match emit::cuda::emit(spec, &launch, naive) {
                    Ok(e) => {
                        if seen.insert(e.source.clone()) {
                            out.push(Kernel {
                                origin: what,
                                emitted: e,
                            })
                        }
                    }
                    Err(e) => refused.push(format!("{what}: {e}")),
                }
            }
        }
    }
    (out, refused)
}

/// Kernels of one NVRTC program: each in its own namespace (the helpers are file-local),
/// its entry renamed to be unique, and a `#line` naming it so diagnostics say which.
/// `#include` lines (cuda_fp16.h, cuda_bf16.h) go first, outside every namespace.
fn batch_source(batch: &[(usize, &Kernel)]) -> String {
    let mut s = String::new();
    let mut includes = String::new();
    for (i, k) in batch {
        let src = k.emitted.source.replace(
            &format!(" {}(", k.emitted.entry),
            &format!(" {}__k{i}(", k.emitted.entry),
        );
        let mut body = String::new();
        for l in src.lines() {
            if l.starts_with("#include ") {
                if !includes.contains(l) {
                    includes += l;
                    includes.push('\n');
                }
            } else {
                body += l;
                body.push('\n');
            }
        }
        let src = body;
        s += &format!(
            "#line 1 \"kernel {i}: {}\"\nnamespace k{i} {{\n{src}}}\n",
            k.origin.replace('"', "'")
        );
    }
    includes + &s
}

#[test]
fn every_session_kernel_compiles_for_cuda_without_warnings() {
    let f = found();
    let nvrtc = match Nvrtc::load() {
        Ok(n) => n,
        Err(e) if in_ci() => panic!("CI=true and {e}"),
        Err(e) => {
            say(&format!(
                "\n*** SKIPPED the CUDA compile sweep: {e}\n*** run scripts/test-all (it installs scripts/cuda-requirements.txt into target/venv)\n"
            ));
            return;
        }
    };
    let ptxas = nvcc::find_ptxas();
    if ptxas.is_none() && in_ci() {
        panic!(
            "CI=true and ptxas not found (IXMAP_PTXAS, or nvidia-cuda-nvcc-cu12 in target/venv)"
        );
    }
    let t0 = Instant::now();
    let n_refused = report_refusals(f);
    let (kernels, emit_refused) = cuda_kernels(f);
    say(&format!(
        "sweep: CUDA emitter refused {} (spec, mapping) pairs:",
        emit_refused.len()
    ));
    let mut by_reason: std::collections::BTreeMap<String, usize> = Default::default();
    for r in &emit_refused {
        *by_reason
            .entry(sweep::reason(
                r.split_once(": ").map_or(r.as_str(), |x| x.1),
            ))
            .or_default() += 1;
    }
    for (why, n) in &by_reason {
        say(&format!("  {n:>3} × {why}"));
    }
    let t_emit = t0.elapsed().as_secs_f64();
    let indexed: Vec<(usize, &Kernel)> = kernels.iter().enumerate().collect();
    let batches: Vec<&[(usize, &Kernel)]> = indexed.chunks(BATCH).collect();
    let tmp = std::env::temp_dir();
    let problems = std::sync::Mutex::new(Vec::<String>::new());
    let resources = std::sync::Mutex::new(Vec::<nvcc::KernelResources>::new());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (nvrtc_ms, ptxas_ms) = (AtomicU64::new(0), AtomicU64::new(0));
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    std::thread::scope(|sc| {
        for _ in 0..workers {
            sc.spawn(|| loop {
                let b = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(batch) = batches.get(b) else { break };
                let src = batch_source(batch);
                for (arch, sm) in [("compute_80", "sm_80"), ("compute_90", "sm_90")] {
                    let opt = format!("--gpu-architecture={arch}");
                    let t = Instant::now();
                    let c = nvrtc.compile(&src, &format!("batch{b}.cu"), &[&opt]);
                    nvrtc_ms.fetch_add(t.elapsed().as_millis() as u64, Relaxed);
                    let c = match c {
                        Ok(c) => c,
                        Err(e) => {
                            problems.lock().unwrap().push(format!("NVRTC: {e}"));
                            continue;
                        }
                    };
                    if !c.log.is_empty() {
                        problems
                            .lock()
                            .unwrap()
                            .push(format!("NVRTC {arch}:\n{}", c.log));
                    }
                    let (Some(ptx), Some(pt)) = (c.ptx, ptxas.as_deref()) else {
                        continue;
                    };
                    let t = Instant::now();
                    let a = nvcc::ptxas(pt, &ptx, sm, &tmp);
                    ptxas_ms.fetch_add(t.elapsed().as_millis() as u64, Relaxed);
                    match a {
                        Ok(a) => {
                            if !a.ok || !a.diagnostics.is_empty() {
                                problems.lock().unwrap().push(format!(
                                    "ptxas {sm} (batch {b}):\n{}",
                                    a.diagnostics.join("\n")
                                ));
                            }
                            if sm == "sm_90" {
                                resources.lock().unwrap().extend(a.kernels);
                            }
                        }
                        Err(e) => problems.lock().unwrap().push(format!("ptxas: {e}")),
                    }
                }
            });
        }
    });
    let problems = problems.into_inner().unwrap();
    let resources = resources.into_inner().unwrap();
    let spilled = resources
        .iter()
        .filter(|r| r.spill_stores + r.spill_loads > 0)
        .count();
    let max_regs = resources.iter().map(|r| r.registers).max().unwrap_or(0);
    say(&format!(
        "sweep: {} CUDA kernels from {} specs compiled with NVRTC {}.{} ({}) for compute_80 and compute_90{} in {:.1} s (emission {:.1} s; NVRTC {:.1} s and ptxas {:.1} s summed over {} batches on {workers} threads); sm_90: at most {max_regs} registers, {spilled} kernels spill",
        kernels.len(),
        f.specs.len(),
        nvrtc.version.0,
        nvrtc.version.1,
        nvrtc.path.display(),
        match &ptxas {
            Some(p) => format!(", assembled by {} for sm_80 and sm_90", p.display()),
            None => " (ptxas not found: not assembled)".into(),
        },
        t0.elapsed().as_secs_f64(),
        t_emit,
        nvrtc_ms.load(Relaxed) as f64 / 1e3,
        ptxas_ms.load(Relaxed) as f64 / 1e3,
        batches.len(),
    ));
    assert!(
        problems.is_empty(),
        "{} compiler complaints:\n{}",
        problems.len(),
        problems.join("\n\n")
    );
    assert!(
        kernels.iter().any(|k| k.origin.contains(":softmax ")),
        "the softmax fusion (tile/softmax.ixm, gpu/cuda-compile.ixm) is swept"
    );
    assert!(
        n_refused <= MAX_REFUSED,
        "{n_refused} names refused, more than {MAX_REFUSED}"
    );
}

/// Tile sizes for the CPU's tiled emitter: the largest divisor of each extent up to 8.
fn small_tile(spec: &KernelSpec) -> Vec<i64> {
    spec.output
        .dims
        .iter()
        .map(|&n| {
            (1..=8.min(n.max(1)))
                .rev()
                .find(|z| n % z == 0)
                .unwrap_or(1)
        })
        .collect()
}

#[test]
fn every_session_kernel_compiles_for_the_cpu_with_wall_werror() {
    if !ixmap::transcript::requirement_met("cc") {
        if in_ci() {
            panic!("CI=true and no C compiler");
        }
        say("\n*** SKIPPED the CPU compile sweep: no C compiler (cc)\n");
        return;
    }
    let f = found();
    let t0 = Instant::now();
    let mut sources: Vec<(String, Emitted)> = Vec::new();
    let mut refused = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (origin, spec) in &f.specs {
        for naive in [false, true] {
            let tile = small_tile(spec);
            // The tiled host kernel only simplified: its naive form is the untiled one's.
            let tiled = !naive && spec.root_reduction().is_none();
            let mut tries = vec![(
                format!("{origin}{}", if naive { " naive" } else { "" }),
                emit::cpu::emit(spec, naive),
            )];
            if tiled {
                tries.push((
                    format!(
                        "{origin} tile={tile:?}{}",
                        if naive { " naive" } else { "" }
                    ),
                    ixmap::tile::tune::emit_tiled_with(spec, &tile, naive),
                ));
            }
            for (what, r) in tries {
                match r {
                    Ok(e) => {
                        if seen.insert(e.source.clone()) {
                            sources.push((what, e));
                        }
                    }
                    Err(e) => refused.push(format!("{what}: {e}")),
                }
            }
        }
    }
    let dir = std::env::temp_dir().join(format!("ixmap-sweep-cpu-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut files = Vec::new();
    for (i, (what, e)) in sources.iter().enumerate() {
        let p = dir.join(format!("k{i}.c"));
        std::fs::write(&p, format!("// {what}\n{}", e.source)).expect("write");
        files.push(p);
    }
    let cc = ixmap::gpu::bench::cpu::compiler();
    let problems = std::sync::Mutex::new(Vec::<String>::new());
    let chunks: Vec<&[std::path::PathBuf]> = files.chunks(files.len().div_ceil(2).max(1)).collect();
    std::thread::scope(|sc| {
        for chunk in &chunks {
            let (cc, dir, problems) = (&cc, &dir, &problems);
            sc.spawn(move || {
                let out = std::process::Command::new(cc)
                    .current_dir(dir)
                    .args(["-std=c11", "-O1", "-fopenmp", "-Wall", "-Werror", "-c"])
                    .args(chunk.iter())
                    .output()
                    .expect("run the C compiler");
                if !out.status.success() || !out.stderr.is_empty() {
                    problems
                        .lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&out.stderr).into_owned());
                }
            });
        }
    });
    let problems = problems.into_inner().unwrap();
    say(&format!(
        "sweep: {} CPU kernels compiled by {cc} -O1 -fopenmp -Wall -Werror in {:.1} s; the CPU emitters refused {}:",
        sources.len(),
        t0.elapsed().as_secs_f64(),
        refused.len()
    ));
    let mut by_reason: std::collections::BTreeMap<String, usize> = Default::default();
    for r in &refused {
        *by_reason
            .entry(sweep::reason(
                r.split_once(": ").map_or(r.as_str(), |x| x.1),
            ))
            .or_default() += 1;
    }
    for (why, n) in &by_reason {
        say(&format!("  {n:>3} × {why}"));
    }
    if problems.is_empty() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(
        problems.is_empty(),
        "the C compiler complained (sources kept in {}):\n{}",
        dir.display(),
        problems.join("\n")
    );
}

/// `benches/xla_gpu.py --dry-run`: the side-by-side script's CPU smoke test. Every fusion of
/// its benchmark set (small shapes) runs through `ixmap bench device=cpu` and verifies, its
/// CUDA source and launch shape are parsed from `ixmap emit`, and the JAX side runs on the
/// CPU when jax is importable (`IXMAP_PYTHON` may name a Python that has it).
#[test]
fn xla_gpu_script_dry_run() {
    let python = std::env::var("IXMAP_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/xla_gpu.py");
    let out = std::process::Command::new(&python)
        .arg(&script)
        .args(["--dry-run", "--ixmap", env!("CARGO_BIN_EXE_ixmap")])
        .output();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            assert!(!in_ci(), "cannot run {python}: {e}");
            say(&format!("SKIPPED: cannot run {python}: {e}"));
            return;
        }
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    say(&text);
    assert!(out.status.success(), "the dry run failed:\n{text}");
    for name in [
        "bcast_mul",
        "transpose",
        "row_sum",
        "softmax_128",
        "bc",
        "g",
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{name}: ixmap bench")))
            .unwrap_or_else(|| panic!("no line for {name}:\n{text}"));
        assert!(line.contains("CUDA ") && line.contains(" grid ("), "{line}");
    }
    assert!(text.contains("; 0 failed"), "{text}");
    // The gather runs where this build emits gathers, else says it does not.
    assert!(
        text.lines()
            .any(|l| l.starts_with("gather: ixmap bench") || l.starts_with("gather: not emitted")),
        "{text}"
    );
    // The shared dumps, where they are beside the checkout: each fusion's kernel and launch,
    // and XLA's time as `ixmap dump` matches the CSV to the module (the name repeats across
    // modules); logsumexp's `abs(sum(exp(x - m)))` a warp per row, not a thread.
    let dumps = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/xla-dumps/h100-jax-0.11.2");
    if dumps.is_dir() {
        // (the dump fusion's line: two spaces, MODEL:FUSION and a colon)
        let line_of = |fusion: &str| {
            text.lines()
                .find(|l| l.starts_with(&format!("  {fusion}:")))
                .unwrap_or_else(|| panic!("no line for {fusion}:\n{text}"))
        };
        let line = line_of("logsumexp_rows:input_reduce_fusion");
        assert!(
            line.contains("row normalization") && line.contains("XLA 14.4 µs"),
            "{line}"
        );
        let line = line_of("mlp:loop_multiply_fusion");
        assert!(line.contains("XLA 19.7 µs"), "{line}");
        // every fusion gets its kernel, the max-pool's reduce-window with its five outputs
        // (the kernel takes one pointer per element of the tuple, after the parameters)
        let skipped: Vec<&str> = text.lines().filter(|l| l.contains(": SKIP")).collect();
        assert!(
            skipped.is_empty(),
            "dump fusions skipped:\n{}",
            skipped.join("\n")
        );
        let line = line_of("pool_grad:loop_reduce_window_fusion");
        assert!(
            line.contains("fused_reduce_window grid") && line.contains("; 5 outputs;"),
            "{line}"
        );
    }
}
