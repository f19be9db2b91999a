//! The emitted CUDA source, run on the CPU: the same text `emit ... target=cuda` prints,
//! compiled by the host C++ compiler after a small header of ours (`cuda_on_cpu.h`:
//! `threadIdx`/`blockIdx`/`blockDim`/`gridDim`, `__global__`/`__device__`/`__shared__`,
//! `__syncthreads` as a barrier of a block's real threads, `__shfl_down_sync`), launched
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
        .map(|(k, t)| format!("(const {} *)args[{k}]", t.elem.c_name()))
        .collect();
    for (k, t) in spec.outputs().iter().enumerate() {
        args.push(format!(
            "({} *)args[{}]",
            t.elem.c_name(),
            spec.inputs.len() + k
        ));
    }
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
        let inputs = match given {
            Some(i) => i.to_vec(),
            None => make_inputs(spec)?,
        };
        // SAFETY: the arguments are as `run_verified` requires (`ix_launch` takes the
        // inputs then the outputs, as the kernel's parameters are declared).
        unsafe { run_verified(spec, inputs, &mut |args| f(args.as_mut_ptr())) }.map(|()| bits)
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
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
    mut inputs: Vec<Vec<u8>>,
    call: &mut dyn FnMut(&mut Vec<*mut std::ffi::c_void>),
) -> Result<(), MapError> {
    use super::spec::Root;
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
    let want = super::reference::Reference::new(spec, &inputs)?.outputs()?;
    let mut outs: Vec<Vec<u8>> = spec
        .outputs()
        .iter()
        .map(|t| Ok(vec![0xffu8; t.num_bytes()? as usize]))
        .collect::<Result<_, MapError>>()?;
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
        outs[0].copy_from_slice(&inputs[*operand]);
    }
    let mut ptrs: Vec<*mut std::ffi::c_void> = inputs
        .iter_mut()
        .chain(outs.iter_mut())
        .map(|b| b.as_mut_ptr() as *mut std::ffi::c_void)
        .collect();
    call(&mut ptrs);
    for (k, (t, (got, want))) in spec
        .outputs()
        .iter()
        .zip(outs.iter().zip(&want))
        .enumerate()
    {
        let tol = if spec.root_reduction().is_some() {
            1e-4
        } else {
            1e-6
        };
        for (i, &w) in want.iter().enumerate() {
            let g = super::reference::read_value(got, t.elem, i);
            if !super::reference::matches(g, w, tol) {
                return Err(err(format!(
                    "output {k} ({}) element {i} (physical offset) is {g} but the reference says {w}",
                    t.name
                )));
            }
        }
    }
    Ok(())
}

/// The host C kernel of `spec` (the CPU emitter's source), compiled by the system C
/// compiler and run on `given` inputs (else [`make_inputs`]'s), every element of every
/// output checked against the reference.
pub fn check_c(spec: &KernelSpec, naive: bool, given: Option<&[Vec<u8>]>) -> Result<(), MapError> {
    let e = emit::cpu::emit(spec, naive)?;
    let k = super::bench::cpu::compile(&e.source, &e.entry)?;
    let inputs = match given {
        Some(i) => i.to_vec(),
        None => make_inputs(spec)?,
    };
    // SAFETY: the CPU entry takes the inputs then the outputs, as `run_verified` passes them.
    unsafe { run_verified(spec, inputs, &mut |args| k.call_args(args)) }
}
