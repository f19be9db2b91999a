//! The emitted CUDA source, run on the CPU: the same text `emit ... target=cuda` prints,
//! compiled by the host C++ compiler after a small header of ours (`cuda_on_cpu.h`:
//! `threadIdx`/`blockIdx`/`blockDim`/`gridDim`, `__global__`/`__device__`/`__shared__`,
//! `__syncthreads` as a barrier of a block's fibers, `__shfl_down_sync`), launched
//! over the launch's grid and checked element by element against the reference. A kernel
//! that compiles for a GPU can still index wrongly; this finds it on a laptop.

use super::emit;
use super::launch::Launch;
use super::reference::make_inputs;
use super::spec::KernelSpec;
use crate::MapError;

pub const HEADER: &str = include_str!("cuda_on_cpu.h");

fn err(msg: String) -> MapError {
    MapError::Other(msg)
}

/// The C++ translation unit: header, the kernel in a namespace of its own (its typedefs
/// then shadow `<cstdint>`'s), and `ix_launch(void **args)` over the grid.
pub fn translation_unit(spec: &KernelSpec, launch: &Launch, source: &str, entry: &str) -> String {
    let mut args: Vec<String> = spec
        .inputs
        .iter()
        .enumerate()
        .map(|(k, t)| format!("(const {} *)args[{k}]", arg_type(t.elem)))
        .collect();
    for (k, t) in spec.outputs().iter().enumerate() {
        args.push(format!(
            "({} *)args[{}]",
            arg_type(t.elem),
            spec.inputs.len() + k
        ));
    }
    format!(
        "{HEADER}\nnamespace ixk {{\n{source}}}\n\nextern \"C\" const char *ix_launch(void **args) {{\n  return ix_launch_grid({}, {}, {}, [&] {{ ixk::{entry}({}); }});\n}}\n",
        launch.grid[0],
        launch.grid[1],
        launch.block[0],
        args.join(", ")
    )
}

/// The type of a kernel argument outside the kernel's namespace: the integer types are
/// the kernel's own typedefs (`ixk::uint64_t` is `unsigned long long`, which `<stdint.h>`'s
/// need not be).
fn arg_type(t: crate::gpu::spec::ElemType) -> String {
    if t.is_int() {
        format!("ixk::{}", t.c_name())
    } else {
        t.cuda_name().to_string()
    }
}

/// A translation unit of [`HEADER`] and a kernel (exporting `ix_launch`), written into
/// `dir`, compiled by the host C++ compiler at `opt` and loaded.
pub fn load_unit(
    dir: &std::path::Path,
    tu: &str,
    opt: &str,
) -> Result<libloading::Library, MapError> {
    let cc = dir.join("kernel.cpp");
    let so = dir.join("kernel.so");
    std::fs::write(&cc, tu).map_err(|e| err(format!("{}: {e}", cc.display())))?;
    // The kernel's `#include <cuda_fp16.h>` / `<cuda_bf16.h>`: the header already has what
    // they would declare.
    for h in ["cuda_fp16.h", "cuda_bf16.h"] {
        let p = dir.join(h);
        std::fs::write(&p, "#pragma once\n").map_err(|e| err(format!("{}: {e}", p.display())))?;
    }
    let out = std::process::Command::new(compiler())
        .args([
            "-std=c++17",
            opt,
            "-fPIC",
            "-shared",
            "-pthread",
            "-w",
            "-o",
        ])
        .arg(&so)
        .arg("-I")
        .arg(dir)
        .arg(&cc)
        .output()
        .map_err(|e| err(format!("cannot run `{}`: {e}", compiler())))?;
    if !out.status.success() {
        return Err(err(format!(
            "the C++ compiler rejected the CUDA source:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    // SAFETY: the library was just compiled from our header and an emitted kernel.
    unsafe { libloading::Library::new(&so) }
        .map_err(|e| err(format!("cannot load the kernel: {e}")))
}

/// The host C++ compiler: `$CXX`, else `c++`.
pub fn compiler() -> String {
    std::env::var("CXX").unwrap_or_else(|_| "c++".to_string())
}

/// Emits `spec` for CUDA with `launch`, runs it on the CPU and checks every element;
/// returns the width of the kernel's index arithmetic (32 or 64 bits).
pub fn check(spec: &KernelSpec, launch: &Launch, naive: bool) -> Result<u32, MapError> {
    check_width(spec, launch, naive, false)
}

/// [`check`], with 64-bit index arithmetic forced when `wide` (small shapes get 32 bits).
pub fn check_width(
    spec: &KernelSpec,
    launch: &Launch,
    naive: bool,
    wide: bool,
) -> Result<u32, MapError> {
    check_inputs(spec, launch, naive, wide, None)
}

/// [`check_width`] on given input buffers (each in its tensor's layout) instead of
/// [`make_inputs`]'s: a dynamic-update-slice's start indices or a scatter's indices chosen
/// by a test.
pub fn check_inputs(
    spec: &KernelSpec,
    launch: &Launch,
    naive: bool,
    wide: bool,
    given: Option<&[Vec<u8>]>,
) -> Result<u32, MapError> {
    check_against(spec, launch, naive, wide, given, None)
}

/// The CUDA text run on the CPU and the C kernel, both on [`make_inputs`]'s inputs and
/// checked against one run of the reference (the dearest part of a check): the index
/// width of the CUDA kernel, or which kernel failed (`"CUDA on the CPU"`, `"the C
/// kernel"`) and why. The C kernel is run only when `also_c`.
pub fn check_cuda_and_c(
    spec: &KernelSpec,
    launch: &Launch,
    also_c: bool,
) -> Result<u32, (&'static str, MapError)> {
    const CUDA: &str = "CUDA on the CPU";
    let inputs = make_inputs(spec).map_err(|e| (CUDA, e))?;
    let want = super::bench::expected_outputs(spec, &inputs).map_err(|e| ("the reference", e))?;
    let bits = check_against(spec, launch, false, false, Some(&inputs), Some(&want))
        .map_err(|e| (CUDA, e))?;
    if also_c {
        const C: &str = "the C kernel";
        let e = emit::cpu::emit(spec, false).map_err(|e| (C, e))?;
        let k = super::bench::cpu::compile(&e.source, &e.entry).map_err(|e| (C, e))?;
        // SAFETY: the CPU entry takes the inputs then the outputs, as `run_verified`
        // passes them.
        unsafe { run_verified_against(spec, &inputs, &want, &mut |args| k.call_args(args)) }
            .map_err(|e| (C, e))?;
    }
    Ok(bits)
}

fn check_against(
    spec: &KernelSpec,
    launch: &Launch,
    naive: bool,
    wide: bool,
    given: Option<&[Vec<u8>]>,
    want: Option<&[super::bench::Expected]>,
) -> Result<u32, MapError> {
    if launch.block[1] != 1 || launch.block[2] != 1 || launch.grid[2] != 1 {
        return Err(err(
            "only 1-D blocks and grids of 1 or 2 dimensions run on the CPU".into(),
        ));
    }
    let (e, bits) = emit::cuda::emit_width(spec, launch, naive, wide)?;
    let tu = translation_unit(spec, launch, &e.source, &e.entry);
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("ixmap-cuda-cpu-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
    let result = (|| {
        let lib = load_unit(&dir, &tu, "-O1")?;
        // Null, or why the launch stopped (a deadlock at a barrier).
        type Launch = unsafe extern "C" fn(*mut *mut std::ffi::c_void) -> *const std::ffi::c_char;
        let f: Launch = unsafe {
            *lib.get::<Launch>(b"ix_launch")
                .map_err(|e| err(format!("no ix_launch: {e}")))?
        };
        let inputs = match given {
            Some(i) => i.to_vec(),
            None => make_inputs(spec)?,
        };
        // SAFETY: the arguments are as `run_verified` requires (`ix_launch` takes the
        // inputs then the outputs, as the kernel's parameters are declared).
        let mut stopped = None;
        let mut call = |args: &mut Vec<*mut std::ffi::c_void>| {
            let m = unsafe { f(args.as_mut_ptr()) };
            if !m.is_null() {
                stopped = Some(
                    unsafe { std::ffi::CStr::from_ptr(m) }
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        };
        let verified = match want {
            Some(w) => unsafe { run_verified_against(spec, &inputs, w, &mut call) },
            None => {
                let w = super::bench::expected_outputs(spec, &inputs)?;
                unsafe { run_verified_against(spec, &inputs, &w, &mut call) }
            }
        };
        match stopped {
            Some(m) => Err(err(format!("the kernel did not run to its end: {m}"))),
            None => verified.map(|()| bits),
        }
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// `bytes` in a buffer aligned to 16 bytes (zero-padded to a multiple of 16).
fn aligned(bytes: &[u8]) -> Vec<u128> {
    let mut v = vec![0u128; bytes.len().div_ceil(16)];
    // SAFETY: `v` has at least `bytes.len()` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), v.as_mut_ptr() as *mut u8, bytes.len())
    };
    v
}

/// Runs a compiled kernel on `inputs` and checks every element of every output against the
/// reference. `call` gets the argument pointers: the inputs, then the outputs. Every output
/// byte is set first, so an element no thread writes reads as NaN (or -1) and fails; the
/// output of an in-place dynamic-update-slice starts as its operand (XLA aliases them).
///
/// # Safety
/// `call` must run a kernel whose parameters are the spec's inputs then its outputs, with
/// every offset inside the tensors' sizes.
pub unsafe fn run_verified(
    spec: &KernelSpec,
    inputs: Vec<Vec<u8>>,
    call: &mut dyn FnMut(&mut Vec<*mut std::ffi::c_void>),
) -> Result<(), MapError> {
    if inputs.len() != spec.inputs.len() {
        return Err(err(format!(
            "{} inputs given, {} expected",
            inputs.len(),
            spec.inputs.len()
        )));
    }
    for (b, t) in inputs.iter().zip(&spec.inputs) {
        if b.len() as i64 != t.num_bytes()? {
            return Err(err(format!("input {} has the wrong byte size", t.name)));
        }
    }
    let want = super::bench::expected_outputs(spec, &inputs)?;
    run_verified_against(spec, &inputs, &want, call)
}

/// [`run_verified`] against reference outputs already computed for these inputs (one
/// reference shared by the CUDA-on-CPU and the C checks).
///
/// # Safety
/// As [`run_verified`].
pub unsafe fn run_verified_against(
    spec: &KernelSpec,
    inputs: &[Vec<u8>],
    want: &[super::bench::Expected],
    call: &mut dyn FnMut(&mut Vec<*mut std::ffi::c_void>),
) -> Result<(), MapError> {
    use super::spec::Root;
    if inputs.len() != spec.inputs.len() || want.len() != spec.outputs().len() {
        return Err(err(format!(
            "{} inputs and {} reference outputs given, {} and {} expected",
            inputs.len(),
            want.len(),
            spec.inputs.len(),
            spec.outputs().len()
        )));
    }
    for (b, t) in inputs.iter().zip(&spec.inputs) {
        if b.len() as i64 != t.num_bytes()? {
            return Err(err(format!("input {} has the wrong byte size", t.name)));
        }
    }
    let sizes: Vec<usize> = spec
        .outputs()
        .iter()
        .map(|t| Ok(t.num_bytes()? as usize))
        .collect::<Result<_, MapError>>()?;
    // Every output byte set, so an element no thread writes reads as NaN (or -1) and fails.
    let mut outs: Vec<Vec<u128>> = sizes.iter().map(|&n| aligned(&vec![0xffu8; n])).collect();
    if let Root::DynamicUpdateSlice { operand, .. } | Root::Scatter { operand, .. } = &spec.root {
        let op = &spec.inputs[*operand];
        if op.elem != spec.output.elem
            || op.dims != spec.output.dims
            || op.minor_to_major != spec.output.minor_to_major
        {
            return Err(err(format!(
                "{}: the output of an in-place dynamic-update-slice or a scatter must have its operand's shape and layout",
                spec.name
            )));
        }
        outs[0] = aligned(&inputs[*operand]);
    }
    // Buffers 16-byte aligned, as the GPU's are (more): the kernel's 128-bit loads and
    // stores need it.
    let mut bufs: Vec<Vec<u128>> = inputs.iter().map(|b| aligned(b)).collect();
    let mut ptrs: Vec<*mut std::ffi::c_void> = bufs
        .iter_mut()
        .chain(outs.iter_mut())
        .map(|b| b.as_mut_ptr() as *mut std::ffi::c_void)
        .collect();
    call(&mut ptrs);
    for (k, (t, (buf, want))) in spec.outputs().iter().zip(outs.iter().zip(want)).enumerate() {
        // SAFETY: `buf` holds at least `sizes[k]` initialised bytes.
        let got = unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const u8, sizes[k]) };
        if let Some((i, g, w)) = super::bench::first_mismatch(spec, k, got, want) {
            let at = format!(
                "output {k} ({}) element {i} (physical offset) is {g} but the reference says {w}",
                t.name
            );
            return Err(match want.why_undetermined(k, i) {
                Some(why) => MapError::Undetermined(format!("{at}: {why}")),
                None => err(at),
            });
        }
    }
    Ok(())
}

/// The host C kernel of `spec` (the CPU emitter's source), compiled by the system C
/// compiler and run on `given` inputs (else [`make_inputs`]'s), every element of every
/// output checked against the reference.
pub fn check_c(spec: &KernelSpec, naive: bool, given: Option<&[Vec<u8>]>) -> Result<(), MapError> {
    check_c_kernel(spec, &emit::cpu::emit(spec, naive)?, given)
}

/// A C kernel of `spec` (the plain one, a tiled loop nest, a layout's walk), compiled, run
/// on [`make_inputs`]'s inputs (or `given`) and checked element by element.
pub fn check_c_kernel(
    spec: &KernelSpec,
    e: &emit::Emitted,
    given: Option<&[Vec<u8>]>,
) -> Result<(), MapError> {
    let k = super::bench::cpu::compile(&e.source, &e.entry)?;
    let inputs = match given {
        Some(i) => i.to_vec(),
        None => make_inputs(spec)?,
    };
    // SAFETY: the CPU entry takes the inputs then the outputs, as `run_verified` passes them.
    unsafe { run_verified(spec, inputs, &mut |args| k.call_args(args)) }
}
