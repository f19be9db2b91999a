//! The emitted CUDA source, run on the CPU: the same text `emit ... target=cuda` prints,
//! compiled by the host C++ compiler after a small header of ours (`cuda_on_cpu.h`:
//! `threadIdx`/`blockIdx`/`blockDim`/`gridDim`, `__global__`/`__device__`/`__shared__`,
//! `__syncthreads` as a barrier of a block's real threads, `__shfl_down_sync`), launched
//! over the launch's grid and checked element by element against the reference. A kernel
//! that compiles for a GPU can still index wrongly; this finds it on a laptop.

use super::bench::{reference_output, verify};
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
    args.push(format!(
        "({} *)args[{}]",
        arg_type(spec.output.elem),
        spec.inputs.len()
    ));
    format!(
        "{HEADER}\nnamespace ixk {{\n{source}}}\n\nextern \"C\" void ix_launch(void **args) {{\n  ix_launch_grid({}, {}, [&] {{ ixk::{entry}({}); }});\n}}\n",
        launch.grid[0],
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
    if launch.block[1] != 1 || launch.block[2] != 1 || launch.grid[1] != 1 || launch.grid[2] != 1 {
        return Err(err("only 1-D grids and blocks run on the CPU".into()));
    }
    let (e, bits) = emit::cuda::emit_width(spec, launch, naive, wide)?;
    let tu = translation_unit(spec, launch, &e.source, &e.entry);
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("ixmap-cuda-cpu-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
    let cc = dir.join("kernel.cpp");
    let so = dir.join("kernel.so");
    let result = (|| {
        std::fs::write(&cc, &tu).map_err(|e| err(format!("{}: {e}", cc.display())))?;
        // The kernel's `#include <cuda_fp16.h>` / `<cuda_bf16.h>`: the header above already
        // has what they would declare.
        for h in ["cuda_fp16.h", "cuda_bf16.h"] {
            let p = dir.join(h);
            std::fs::write(&p, "#pragma once\n")
                .map_err(|e| err(format!("{}: {e}", p.display())))?;
        }
        let out = std::process::Command::new(compiler())
            .args([
                "-std=c++17",
                "-O1",
                "-fPIC",
                "-shared",
                "-pthread",
                "-w",
                "-o",
            ])
            .arg(&so)
            .arg("-I")
            .arg(&dir)
            .arg(&cc)
            .output()
            .map_err(|e| err(format!("cannot run `{}`: {e}", compiler())))?;
        if !out.status.success() {
            return Err(err(format!(
                "the C++ compiler rejected the CUDA source:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        // SAFETY: the library was just compiled from our header and emitted kernel; it
        // exports `ix_launch(void **)`.
        let lib = unsafe { libloading::Library::new(&so) }
            .map_err(|e| err(format!("cannot load the kernel: {e}")))?;
        type Launch = unsafe extern "C" fn(*mut *mut std::ffi::c_void);
        let f: Launch = unsafe {
            *lib.get::<Launch>(b"ix_launch")
                .map_err(|e| err(format!("no ix_launch: {e}")))?
        };
        let inputs = make_inputs(spec)?;
        let want = reference_output(spec, &inputs)?;
        // Buffers 16-byte aligned, as the GPU's are (more): the kernel's 128-bit loads and
        // stores need it.
        let aligned = |bytes: &[u8]| -> Vec<u128> {
            let mut v = vec![0u128; bytes.len().div_ceil(16)];
            // SAFETY: `v` has at least `bytes.len()` bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    v.as_mut_ptr() as *mut u8,
                    bytes.len(),
                )
            };
            v
        };
        let mut bufs: Vec<Vec<u128>> = inputs.iter().map(|b| aligned(b)).collect();
        // Every byte set, so an element no thread writes reads as NaN (or -1) and fails.
        let out_len = spec.output.num_bytes()? as usize;
        let mut out_buf = aligned(&vec![0xffu8; out_len]);
        let mut ptrs: Vec<*mut std::ffi::c_void> = bufs
            .iter_mut()
            .map(|b| b.as_mut_ptr() as *mut std::ffi::c_void)
            .collect();
        ptrs.push(out_buf.as_mut_ptr() as *mut std::ffi::c_void);
        // SAFETY: the arguments are the inputs then the output, sized from the spec's
        // tensors, as the kernel's parameters are declared.
        unsafe { f(ptrs.as_mut_ptr()) };
        // SAFETY: `out_buf` holds at least `out_len` initialised bytes.
        let out = unsafe { std::slice::from_raw_parts(out_buf.as_ptr() as *const u8, out_len) };
        verify(spec, out, &want).map(|()| bits)
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}
