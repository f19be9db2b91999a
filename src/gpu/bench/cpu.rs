//! The CPU backend: the emitted C is compiled by the system C compiler (`cc -O3
//! -march=native`) into a shared library, loaded, run on the inputs, verified, and timed
//! with a monotonic clock against `memcpy` of the same number of bytes.
//!
//! Why a C compiler and not a JIT: see the README ("CPU backend"). In short, `cc` is on
//! every machine, its vectorizer turns the simplified `p0[i]` loops into the same code as
//! a hand-written loop, and its ~50 ms compile time is small next to a benchmark.

use super::{reference_output, verify, Measured, Options, Outcome, Timing};
use crate::gpu::emit::cpu::emit;
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

/// Compiles C source with an exported `void entry(void **)` and loads it.
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
    let out = std::process::Command::new(compiler())
        .args(["-O3", "-march=native", "-fPIC", "-shared", "-std=c11", "-o"])
        .arg(&so)
        .arg(&c)
        .arg("-lm")
        .output()
        .map_err(|e| err(format!("cannot run the C compiler `{}`: {e}", compiler())))?;
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

/// Times `f` `reps` times after `warmups` calls.
fn time(opts: &Options, label: &str, mut f: impl FnMut()) -> Result<Timing, MapError> {
    let pb = bar(opts, (opts.warmups + opts.reps) as u64, label);
    for _ in 0..opts.warmups {
        f();
        pb.inc(1);
    }
    let mut samples = Vec::with_capacity(opts.reps);
    for _ in 0..opts.reps.max(1) {
        if crate::interrupted() {
            pb.finish_and_clear();
            return Err(MapError::Interrupted);
        }
        let t = Instant::now();
        f();
        samples.push(t.elapsed().as_secs_f64());
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok(Timing::from_samples(samples))
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

/// Compiles, verifies (before and after timing) and times each labelled kernel of `spec`,
/// then a copy of the same bytes; the first kernel is the main figure.
pub fn run_kernels(
    spec: &KernelSpec,
    opts: &Options,
    kernels: Vec<(String, Emitted)>,
) -> Result<Outcome, MapError> {
    let inputs = make_inputs(spec)?;
    let want = reference_output(spec, &inputs)?;
    let out_bytes = spec.output.num_bytes()? as usize;
    let bytes = spec.bytes_moved()? as u64;
    let mut variants = Vec::new();
    for (label, e) in kernels {
        let k = compile(&e.source, &e.entry)?;
        let mut out = vec![0u8; out_bytes];
        k.call(&inputs, &mut out);
        verify(spec, &out, &want)?;
        let timing = time(opts, &label, || k.call(&inputs, &mut out))?;
        // Verified again after the timed runs: the figures belong to a correct output.
        verify(spec, &out, &want)?;
        variants.push(Measured {
            label,
            timing,
            verified: true,
            compile_s: k.compile_s,
        });
    }
    // memcpy of the same bytes: half read, half written.
    let half = (bytes / 2).max(1) as usize;
    let src = vec![1u8; half];
    let mut dst = vec![0u8; half];
    let copy = time(opts, "memcpy", || {
        dst.copy_from_slice(&src);
        std::hint::black_box(&mut dst);
    })?;
    Ok(Outcome {
        device: format!("cpu ({})", cpu_name()),
        bytes,
        copy,
        variants,
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
