//! The CPU backend: the emitted C is compiled by the system C compiler (`cc -O3
//! -march=native -fno-trapping-math -fopenmp`) into a shared library, loaded, run on the
//! inputs, verified, and timed with a monotonic clock, interleaved with `memcpy` of the same
//! number of bytes.
//!
//! Why a C compiler and not a JIT: see the README ("CPU backend"). In short, `cc` is on
//! every machine, its vectorizer turns the simplified `p0[i]` loops into the same code as
//! a hand-written loop, and its ~50 ms compile time is small next to a benchmark.

use super::{reference_output, verify, Measured, Options, Outcome};
use crate::gpu::emit::cpu::{emit, emit_tiled_with};
use crate::gpu::emit::Emitted;
use crate::gpu::reference::make_inputs;
use crate::gpu::spec::KernelSpec;
use crate::MapError;
use std::path::PathBuf;
use std::time::Instant;

type Entry = unsafe extern "C" fn(*mut *mut std::ffi::c_void);

/// A compiled kernel, loaded.
pub struct Compiled {
    _lib: libloading::Library,
    entry: Entry,
    pub compile_s: f64,
    _dir: TempDir,
}

struct TempDir(PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn err(msg: String) -> MapError {
    MapError::Other(msg)
}

/// The system C compiler: `$CC`, else `cc`.
pub fn compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

/// Whether the C compiler accepts `-fopenmp` (asked once, by compiling a kernel with it).
static OPENMP: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// The OpenMP runtime, loaded once and never unloaded: kernels link it, and unloading a
/// kernel must not unload the runtime while its worker threads live.
fn openmp_runtime() -> Option<&'static libloading::Library> {
    static LIB: std::sync::OnceLock<Option<libloading::Library>> = std::sync::OnceLock::new();
    LIB.get_or_init(|| {
        // SAFETY: libgomp's initialisers only set up its own state.
        unsafe { libloading::Library::new("libgomp.so.1") }.ok()
    })
    .as_ref()
}

/// The threads a kernel runs on for `threads` (0: every core), as set for the next calls
/// from this thread; 1 where the kernels are compiled without OpenMP. For every core,
/// OpenMP's dynamic adjustment is on (`omp_set_dynamic`): the runtime then gives a parallel
/// loop fewer threads when the machine's load average leaves fewer cores idle, rather than
/// a team whose every thread the loop must wait for (issue 28: on a 2-core machine at load
/// 5 to 6, softmax f32[4096,1024] took 5.8 ms on 2 threads with the default, 1.6 ms with
/// the adjustment, 1.8 ms on one thread). An explicit count is kept exactly.
pub fn set_threads(threads: usize) -> usize {
    let want = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    };
    if OPENMP.get() != Some(&true) {
        return 1;
    }
    let Some(lib) = openmp_runtime() else {
        return 1;
    };
    type SetThreads = unsafe extern "C" fn(i32);
    // SAFETY: `omp_set_num_threads(int)` is OpenMP's API, with this signature.
    match unsafe { lib.get::<SetThreads>(b"omp_set_num_threads") } {
        Ok(f) => {
            unsafe { f(want.min(i32::MAX as usize) as i32) };
            // SAFETY: `omp_set_dynamic(int)` is OpenMP's API, with this signature.
            if let Ok(d) = unsafe { lib.get::<SetThreads>(b"omp_set_dynamic") } {
                unsafe { d((threads == 0) as i32) };
            }
            want
        }
        Err(_) => 1,
    }
}

fn run_cc(
    c: &std::path::Path,
    so: &std::path::Path,
    openmp: bool,
) -> Result<std::process::Output, MapError> {
    let mut cmd = std::process::Command::new(compiler());
    // -fno-trapping-math: a float comparison may then be evaluated on every lane, so a loop
    // with a select (`x > c ? a : b`, max, ix_expf's range checks) vectorizes; without it gcc
    // keeps such a loop scalar (softmax f32[4096,1024]: 211 ms scalar, 32 ms vectorized, one
    // thread). No value changes: the kernels never read the floating-point exception flags.
    cmd.args([
        "-O3",
        "-march=native",
        "-fno-trapping-math",
        "-fPIC",
        "-shared",
        "-std=c11",
    ]);
    if openmp {
        cmd.arg("-fopenmp");
    }
    cmd.arg("-o")
        .arg(so)
        .arg(c)
        .arg("-lm")
        .output()
        .map_err(|e| err(format!("cannot run the C compiler `{}`: {e}", compiler())))
}

/// Compiles C source with an exported `void entry(void **)` and loads it: with `-fopenmp`
/// where the compiler has OpenMP (the kernels' `#pragma omp` split the outer loop across
/// threads), else without (the pragmas are ignored: one thread).
pub fn compile(source: &str, entry: &str) -> Result<Compiled, MapError> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("ixmap-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| err(format!("cannot create {}: {e}", dir.display())))?;
    let dir = TempDir(dir);
    let c = dir.0.join("kernel.c");
    let so = dir.0.join("kernel.so");
    std::fs::write(&c, source).map_err(|e| err(format!("cannot write {}: {e}", c.display())))?;
    let t0 = Instant::now();
    let mut out = run_cc(&c, &so, OPENMP.get() != Some(&false))?;
    if OPENMP.get().is_none() {
        if out.status.success() && openmp_runtime().is_some() {
            let _ = OPENMP.set(true);
        } else {
            // Try once without OpenMP: if that compiles, the compiler (or the runtime) is
            // what lacks it, and every kernel runs on one thread.
            let plain = run_cc(&c, &so, false)?;
            if plain.status.success() {
                let _ = OPENMP.set(false);
            }
            out = plain;
        }
    }
    let compile_s = t0.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(err(format!(
            "the C compiler rejected the kernel:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    // SAFETY: the library is the one just compiled from our own source; it has no
    // initialisers and exports `entry` with the `Entry` signature.
    let lib = unsafe { libloading::Library::new(&so) }
        .map_err(|e| err(format!("cannot load the kernel: {e}")))?;
    let entry: Entry = unsafe {
        *lib.get::<Entry>(entry.as_bytes())
            .map_err(|e| err(format!("no entry point: {e}")))?
    };
    Ok(Compiled {
        _lib: lib,
        entry,
        compile_s,
        _dir: dir,
    })
}

impl Compiled {
    /// Runs the kernel once with raw argument pointers: the inputs, then the outputs.
    ///
    /// # Safety
    /// `args` must point to buffers of the spec's tensors, in the kernel's parameter order.
    pub unsafe fn call_args(&self, args: &mut [*mut std::ffi::c_void]) {
        unsafe { (self.entry)(args.as_mut_ptr()) }
    }

    /// Runs the kernel once on `inputs`, writing `out`.
    pub fn call(&self, inputs: &[Vec<u8>], out: &mut [u8]) {
        let mut args: Vec<*mut std::ffi::c_void> = inputs
            .iter()
            .map(|b| b.as_ptr() as *mut std::ffi::c_void)
            .collect();
        args.push(out.as_mut_ptr() as *mut std::ffi::c_void);
        // SAFETY: the kernel reads each input within its tensor's size and writes the
        // output within its size (every offset comes from maps bounded by the shapes, and
        // the reference check below catches a kernel that misbehaves); the buffers are
        // sized from the same tensors.
        unsafe { (self.entry)(args.as_mut_ptr()) }
    }
}

fn bar(opts: &Options, len: u64, msg: &str) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if opts.progress && std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(len);
        b.set_message(msg.to_string());
        b
    } else {
        indicatif::ProgressBar::hidden()
    }
}

pub fn run(
    spec: &KernelSpec,
    opts: &Options,
    with_naive: bool,
    naive_only: bool,
) -> Result<Outcome, MapError> {
    let mut kernels = Vec::new();
    if !naive_only {
        kernels.push(("simplified".to_string(), emit(spec, false)?));
    }
    if with_naive || naive_only {
        kernels.push(("naive".to_string(), emit(spec, true)?));
    }
    run_kernels(spec, opts, kernels)
}

/// The variants `bench` runs for a CPU tile: the tiled loop nest (simplified, then with
/// naive indexing unless `naive`), then the untiled loop, labelled.
pub fn tiled_variants(
    spec: &KernelSpec,
    tile: &[i64],
    naive: bool,
) -> Result<Vec<(String, Emitted)>, MapError> {
    let label = format!(
        "tiled {}",
        tile.iter()
            .map(|z| z.to_string())
            .collect::<Vec<_>>()
            .join("x")
    );
    let mut kernels = vec![];
    if !naive {
        kernels.push((label.clone(), emit_tiled_with(spec, tile, false)?));
    }
    kernels.push((
        format!("{label}, naive"),
        emit_tiled_with(spec, tile, true)?,
    ));
    kernels.push((
        if naive { "untiled, naive" } else { "untiled" }.to_string(),
        emit(spec, naive)?,
    ));
    Ok(kernels)
}

/// Compiles and verifies each labelled kernel of `spec`, times them and a copy of the same
/// bytes interleaved round by round, and verifies every output again after timing; the
/// first kernel is the main figure.
pub fn run_kernels(
    spec: &KernelSpec,
    opts: &Options,
    kernels: Vec<(String, Emitted)>,
) -> Result<Outcome, MapError> {
    spec.single_output("bench")?;
    let inputs = make_inputs(spec)?;
    let want = reference_output(spec, &inputs)?;
    let out_bytes = spec.output.num_bytes()? as usize;
    let bytes = spec.bytes_moved()? as u64;
    let mut compiled = Vec::new();
    for (label, e) in kernels {
        let k = compile(&e.source, &e.entry)?;
        compiled.push((label, k, vec![0u8; out_bytes]));
    }
    let threads = set_threads(opts.threads);
    for (_, k, out) in &mut compiled {
        k.call(&inputs, out);
        verify(spec, out, &want)?;
    }
    // memcpy of the same bytes: half read, half written.
    let half = (bytes / 2).max(1) as usize;
    let src = vec![1u8; half];
    let mut dst = vec![0u8; half];
    let timings = {
        let mut fns: Vec<Box<dyn FnMut() + '_>> = Vec::new();
        for (_, k, out) in compiled.iter_mut() {
            let (k, inputs) = (&*k, &inputs);
            fns.push(Box::new(move || k.call(inputs, out)));
        }
        fns.push(Box::new(|| {
            dst.copy_from_slice(&src);
            std::hint::black_box(&mut dst);
        }));
        let mut refs: Vec<&mut dyn FnMut()> = fns
            .iter_mut()
            .map(|f| &mut **f as &mut dyn FnMut())
            .collect();
        let pb = bar(
            opts,
            (opts.reps.max(1) * refs.len()) as u64,
            "interleaved rounds",
        );
        let t = super::interleave(opts, &mut refs, &mut |i, _| pb.set_position(i));
        pb.finish_and_clear();
        t?
    };
    let mut variants = Vec::new();
    for ((label, k, out), timing) in compiled.into_iter().zip(&timings) {
        // Verified again after the timed runs: the figures belong to a correct output.
        verify(spec, &out, &want)?;
        variants.push(Measured {
            label,
            timing: timing.clone(),
            verified: true,
            compile_s: k.compile_s,
            code: None,
        });
    }
    let copy = timings
        .last()
        .cloned()
        .ok_or_else(|| err("nothing was timed".into()))?;
    Ok(Outcome {
        device: format!(
            "cpu ({}, {threads} thread{})",
            cpu_name(),
            if threads == 1 { "" } else { "s" }
        ),
        bytes,
        copy,
        variants,
        method: None,
    })
}

/// The CPU's model name, from /proc/cpuinfo where there is one.
pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}
