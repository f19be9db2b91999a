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
        .map(|(k, t)| format!("(const {} *)args[{k}]", t.elem.c_name()))
        .collect();
    args.push(format!(
        "({} *)args[{}]",
        spec.output.elem.c_name(),
        spec.inputs.len()
    ));
    format!(
        "{HEADER}\nnamespace ixk {{\n{source}}}\n\nextern \"C\" void ix_launch(void **args) {{\n  ix_launch_grid({}, {}, [&] {{ ixk::{entry}({}); }});\n}}\n",
        launch.grid[0],
        launch.block[0],
        args.join(", ")
    )
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
        let mut inputs = make_inputs(spec)?;
        let want = reference_output(spec, &inputs)?;
        // Every byte set, so an element no thread writes reads as NaN (or -1) and fails.
        let mut out = vec![0xffu8; spec.output.num_bytes()? as usize];
        let mut ptrs: Vec<*mut std::ffi::c_void> = inputs
            .iter_mut()
            .map(|b| b.as_mut_ptr() as *mut std::ffi::c_void)
            .collect();
        ptrs.push(out.as_mut_ptr() as *mut std::ffi::c_void);
        // SAFETY: the arguments are the inputs then the output, sized from the spec's
        // tensors, as the kernel's parameters are declared.
        unsafe { f(ptrs.as_mut_ptr()) };
        verify(spec, &out, &want).map(|()| bits)
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}
