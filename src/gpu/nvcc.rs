//! NVIDIA's compilers without a GPU: NVRTC (CUDA C → PTX, loaded at run time from
//! `libnvrtc.so.12`) and ptxas (PTX → machine code for one architecture, run as a process),
//! as the `nvidia-cuda-nvrtc-cu12` and `nvidia-cuda-nvcc-cu12` wheels install them.
//!
//! Found, in order: `IXMAP_NVRTC` (a path to the library) and `IXMAP_PTXAS` (a path to the
//! program); the Python environments `IXMAP_VENV`, `VIRTUAL_ENV`, `./target/venv` and the
//! `venv` beside the running executable's folder (`target/venv` for `target/debug/ixmap`);
//! then the system (`libnvrtc.so.12` by the loader's search, `ptxas` on `PATH`,
//! `/usr/local/cuda/bin`).
//!
//! Used by `emit ... target=cuda` (registers, spills and shared memory per kernel from
//! `ptxas -v`) and by the sweep that compiles every emitted kernel (`tests/gpu_sweep.rs`).

use std::ffi::{c_char, c_int, CStr, CString};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Python environments that may hold NVIDIA's wheels.
fn venvs() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for var in ["IXMAP_VENV", "VIRTUAL_ENV"] {
        if let Some(p) = std::env::var_os(var) {
            v.push(PathBuf::from(p));
        }
    }
    v.push(PathBuf::from("target/venv"));
    if let Ok(exe) = std::env::current_exe() {
        // target/debug/ixmap or target/debug/deps/test-… → target/venv.
        for up in exe.ancestors().skip(1).take(3) {
            v.push(up.join("venv"));
        }
    }
    v
}

/// `nvidia/<package>/<rest>` under each environment's site-packages.
fn in_wheels(package: &str, rest: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for venv in venvs() {
        let Ok(libs) = std::fs::read_dir(venv.join("lib")) else {
            continue;
        };
        for py in libs.flatten() {
            let p = py
                .path()
                .join("site-packages/nvidia")
                .join(package)
                .join(rest);
            if p.exists() {
                out.push(p);
            }
        }
    }
    out
}

/// Where NVRTC found the 16-bit float types' headers (`cuda_fp16.h`, `cuda_bf16.h`): the
/// directory, and why it was searched (`IXMAP_CUDA_INCLUDE`, `CUDA_HOME`, the directory of
/// `nvcc` on PATH, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaInclude {
    pub dir: PathBuf,
    pub from: String,
}

impl std::fmt::Display for CudaInclude {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.dir.display(), self.from)
    }
}

/// The directories that may hold `cuda_fp16.h`, in the order they are searched, each with
/// why: `IXMAP_CUDA_INCLUDE`; `CUDA_HOME/include` and `CUDA_PATH/include` (a CUDA
/// installation); `../include` beside each `nvcc` on `PATH`; each of `system` (for the
/// real search, `/usr/local/cuda/include`); then NVIDIA's pip wheels in each of `venvs`:
/// `nvidia/cuda_runtime/include` (`nvidia-cuda-runtime-cu12`) and `nvidia/cu13/include`
/// (CUDA 13's wheels). `env` reads an environment variable.
pub fn include_candidates(
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    system: &[PathBuf],
    venvs: &[PathBuf],
) -> Vec<CudaInclude> {
    let mut out = Vec::new();
    let mut push = |dir: PathBuf, from: String| out.push(CudaInclude { dir, from });
    if let Some(p) = env("IXMAP_CUDA_INCLUDE") {
        push(PathBuf::from(p), "IXMAP_CUDA_INCLUDE".into());
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(p) = env(var) {
            push(PathBuf::from(p).join("include"), format!("{var}/include"));
        }
    }
    if let Some(path) = env("PATH") {
        for d in std::env::split_paths(&path) {
            if d.join("nvcc").is_file() {
                if let Some(root) = d.parent() {
                    push(
                        root.join("include"),
                        format!("beside {}", d.join("nvcc").display()),
                    );
                }
            }
        }
    }
    for d in system {
        push(d.clone(), "the system's CUDA".into());
    }
    for venv in venvs {
        let Ok(libs) = std::fs::read_dir(venv.join("lib")) else {
            continue;
        };
        let mut pys: Vec<PathBuf> = libs.flatten().map(|e| e.path()).collect();
        pys.sort();
        for py in pys {
            let nv = py.join("site-packages/nvidia");
            push(
                nv.join("cuda_runtime/include"),
                "the nvidia-cuda-runtime-cu12 wheel".into(),
            );
            push(nv.join("cu13/include"), "CUDA 13's pip wheels".into());
        }
    }
    out
}

/// The first of [`include_candidates`] that holds `cuda_fp16.h`, or an error that lists
/// every directory searched.
pub fn find_cuda_include(candidates: &[CudaInclude]) -> Result<CudaInclude, String> {
    if let Some(c) = candidates
        .iter()
        .find(|c| c.dir.join("cuda_fp16.h").is_file())
    {
        return Ok(c.clone());
    }
    let looked: Vec<String> = candidates.iter().map(|c| c.to_string()).collect();
    Err(format!(
        "no directory has cuda_fp16.h (f16 and bf16 kernels need CUDA's headers): looked in {}; set IXMAP_CUDA_INCLUDE or CUDA_HOME, or install nvidia-cuda-runtime-cu12",
        if looked.is_empty() {
            "nothing (no CUDA_HOME, CUDA_PATH, nvcc on PATH, /usr/local/cuda or Python environment)".to_string()
        } else {
            looked.join(", ")
        }
    ))
}

/// The directory of `cuda_fp16.h` and `cuda_bf16.h` for NVRTC (which has no system
/// headers), searched as [`include_candidates`] says in this process's environment.
pub fn cuda_include() -> Result<CudaInclude, String> {
    let env = |v: &str| std::env::var_os(v);
    find_cuda_include(&include_candidates(
        &env,
        &[PathBuf::from("/usr/local/cuda/include")],
        &venvs(),
    ))
}

/// [`cuda_include`]'s directory, if one is found.
pub fn cuda_include_dir() -> Option<PathBuf> {
    cuda_include().ok().map(|c| c.dir)
}

/// Whether a CUDA source includes CUDA's headers (the 16-bit float types').
pub fn needs_cuda_headers(source: &str) -> bool {
    source.contains("#include <cuda_")
}

/// The ptxas program, if one is found.
pub fn find_ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IXMAP_PTXAS") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    if let Some(p) = in_wheels("cuda_nvcc", "bin/ptxas").into_iter().next() {
        return Some(p);
    }
    if let Some(path) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&path) {
            if d.join("ptxas").is_file() {
                return Some(d.join("ptxas"));
            }
        }
    }
    let p = PathBuf::from("/usr/local/cuda/bin/ptxas");
    p.is_file().then_some(p)
}

type CreateProgram = unsafe extern "C" fn(
    *mut *mut std::ffi::c_void,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
type CompileProgram =
    unsafe extern "C" fn(*mut std::ffi::c_void, c_int, *const *const c_char) -> c_int;
type SizeOf = unsafe extern "C" fn(*mut std::ffi::c_void, *mut usize) -> c_int;
type Get = unsafe extern "C" fn(*mut std::ffi::c_void, *mut c_char) -> c_int;
type Destroy = unsafe extern "C" fn(*mut *mut std::ffi::c_void) -> c_int;
type VersionFn = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;

/// A loaded NVRTC.
pub struct Nvrtc {
    lib: libloading::Library,
    pub path: PathBuf,
    pub version: (i32, i32),
}

/// What NVRTC made of one program: PTX when it compiled, and its log (warnings and
/// errors, empty when there are none); where CUDA's headers were found, when it includes
/// them.
pub struct Compiled {
    pub ptx: Option<String>,
    pub log: String,
    pub include: Option<CudaInclude>,
}

impl Nvrtc {
    /// Loads NVRTC from `IXMAP_NVRTC`, the wheels, or the system; `Err` says where it looked.
    pub fn load() -> Result<Nvrtc, String> {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(p) = std::env::var_os("IXMAP_NVRTC") {
            candidates.push(PathBuf::from(p));
        } else {
            candidates.extend(in_wheels("cuda_nvrtc", "lib/libnvrtc.so.12"));
            candidates.push(PathBuf::from("libnvrtc.so.12"));
            candidates.push(PathBuf::from("libnvrtc.so"));
            candidates.push(PathBuf::from("/usr/local/cuda/lib64/libnvrtc.so"));
        }
        let mut why = Vec::new();
        for c in &candidates {
            // SAFETY: loading NVIDIA's NVRTC, a library without initialisers that matter.
            match unsafe { libloading::Library::new(c) } {
                Ok(lib) => {
                    let mut n = Nvrtc {
                        lib,
                        path: c.clone(),
                        version: (0, 0),
                    };
                    n.version = n.query_version()?;
                    return Ok(n);
                }
                Err(e) => why.push(format!("{}: {e}", c.display())),
            }
        }
        Err(format!(
            "NVRTC not found (set IXMAP_NVRTC, or install nvidia-cuda-nvrtc-cu12 into target/venv); tried {}",
            why.join("; ")
        ))
    }

    fn sym<T: Copy>(&self, name: &str) -> Result<T, String> {
        // SAFETY: the types above are NVRTC's documented C signatures.
        unsafe { self.lib.get::<T>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| format!("NVRTC has no {name}: {e}"))
    }

    fn query_version(&self) -> Result<(i32, i32), String> {
        let f: VersionFn = self.sym("nvrtcVersion")?;
        let (mut a, mut b) = (0, 0);
        // SAFETY: two out-pointers to live ints.
        unsafe { f(&mut a, &mut b) };
        Ok((a, b))
    }

    /// Compiles `source` (named `name` in diagnostics) with `options` such as
    /// `--gpu-architecture=compute_90`.
    pub fn compile(&self, source: &str, name: &str, options: &[&str]) -> Result<Compiled, String> {
        let create: CreateProgram = self.sym("nvrtcCreateProgram")?;
        let compile: CompileProgram = self.sym("nvrtcCompileProgram")?;
        let log_size: SizeOf = self.sym("nvrtcGetProgramLogSize")?;
        let get_log: Get = self.sym("nvrtcGetProgramLog")?;
        let ptx_size: SizeOf = self.sym("nvrtcGetPTXSize")?;
        let get_ptx: Get = self.sym("nvrtcGetPTX")?;
        let destroy: Destroy = self.sym("nvrtcDestroyProgram")?;
        let src = CString::new(source).map_err(|_| "a NUL in the source".to_string())?;
        let cname = CString::new(name).map_err(|_| "a NUL in the name".to_string())?;
        let mut options: Vec<String> = options.iter().map(|o| o.to_string()).collect();
        // The 16-bit float types' headers, for kernels that include them: without them
        // NVRTC would only say it cannot open the file, not where it was looked for.
        let include = if needs_cuda_headers(source) {
            let inc = cuda_include()?;
            options.push(format!("--include-path={}", inc.dir.display()));
            Some(inc)
        } else {
            None
        };
        let opts: Vec<CString> = options
            .iter()
            .map(|o| CString::new(o.as_str()).map_err(|_| "a NUL in an option".to_string()))
            .collect::<Result<_, _>>()?;
        let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        let mut prog: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: NVRTC's C API with live, NUL-terminated strings; the program is destroyed
        // before returning, and the buffers are sized by NVRTC's own size queries.
        unsafe {
            let rc = create(
                &mut prog,
                src.as_ptr(),
                cname.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            );
            if rc != 0 {
                return Err(format!("nvrtcCreateProgram failed ({rc})"));
            }
            let rc = compile(prog, opt_ptrs.len() as c_int, opt_ptrs.as_ptr());
            let read = |size: SizeOf, get: Get| -> String {
                let mut n = 0usize;
                if size(prog, &mut n) != 0 || n == 0 {
                    return String::new();
                }
                let mut buf = vec![0u8; n];
                if get(prog, buf.as_mut_ptr() as *mut c_char) != 0 {
                    return String::new();
                }
                CStr::from_bytes_until_nul(&buf)
                    .map(|c| c.to_string_lossy().into_owned())
                    .unwrap_or_default()
            };
            let log = read(log_size, get_log);
            let ptx = (rc == 0).then(|| read(ptx_size, get_ptx));
            destroy(&mut prog);
            Ok(Compiled {
                ptx,
                log: log.trim().to_string(),
                include,
            })
        }
    }
}

/// What ptxas reports for one kernel (`ptxas -v`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelResources {
    pub name: String,
    pub registers: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
    pub stack_bytes: u32,
    pub shared_bytes: u32,
}

/// What ptxas said about one PTX file: per-kernel resources, and its warnings and errors.
pub struct Assembled {
    pub ok: bool,
    pub kernels: Vec<KernelResources>,
    /// Lines of ptxas's output that are warnings or errors (not `ptxas info`).
    pub diagnostics: Vec<String>,
}

/// Assembles `ptx` for `arch` (`sm_90`) with `ptxas -v`, the PTX written to a file in `dir`.
pub fn ptxas(ptxas: &Path, ptx: &str, arch: &str, dir: &Path) -> Result<Assembled, String> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let file = dir.join(format!("ixmap-{}-{n}.ptx", std::process::id()));
    std::fs::write(&file, ptx).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg(&file)
        .arg("-o")
        .arg("/dev/null")
        .output();
    let _ = std::fs::remove_file(&file);
    let out = out.map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let (kernels, diagnostics) = parse_ptxas(&text);
    Ok(Assembled {
        ok: out.status.success(),
        kernels,
        diagnostics,
    })
}

fn number_before(line: &str, what: &str) -> Option<u32> {
    let i = line.find(what)?;
    line[..i].split_whitespace().last()?.parse().ok()
}

/// Parses `ptxas -v` output: `Compiling entry function 'NAME'`, then `N bytes stack frame,
/// N bytes spill stores, N bytes spill loads` and `Used N registers, … N bytes smem`.
pub fn parse_ptxas(text: &str) -> (Vec<KernelResources>, Vec<String>) {
    let mut kernels: Vec<KernelResources> = Vec::new();
    let mut diags = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        if let Some(rest) = l.strip_prefix("ptxas info") {
            if let Some(i) = rest.find("Compiling entry function '") {
                let name = rest[i + 26..].split('\'').next().unwrap_or("").to_string();
                kernels.push(KernelResources {
                    name,
                    ..Default::default()
                });
            } else if let Some(k) = kernels.last_mut() {
                if rest.contains("Used") {
                    k.registers = number_before(rest, "registers").unwrap_or(0);
                    k.shared_bytes = number_before(rest, "bytes smem").unwrap_or(0);
                }
            }
        } else if l.contains("bytes stack frame") {
            if let Some(k) = kernels.last_mut() {
                k.stack_bytes = number_before(l, "bytes stack frame").unwrap_or(0);
                k.spill_stores = number_before(l, "bytes spill stores").unwrap_or(0);
                k.spill_loads = number_before(l, "bytes spill loads").unwrap_or(0);
            }
        } else {
            diags.push(l.to_string());
        }
    }
    (kernels, diags)
}

/// Instructions in PTX text: statements (lines ending in `;`) that are not directives
/// (`.reg`, `.param`, `.version`, ...), labels or braces. What NVRTC's output shows of the
/// index arithmetic before ptxas optimizes it.
pub fn ptx_instructions(ptx: &str) -> usize {
    ptx.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//") && !l.starts_with('.'))
        .filter(|l| l.ends_with(';'))
        .count()
}

/// `cuobjdump` (CUDA's SASS disassembler): `IXMAP_CUOBJDUMP`, else in a venv's
/// `nvidia-cuda-cuobjdump` wheel (CUDA 13's, `nvidia/cu13/bin`, with `nvidia-cuda-nvdisasm`
/// beside it: cuobjdump runs nvdisasm for `-sass`), else next to ptxas, else on the `PATH`.
/// CUDA 13's cuobjdump lists the `sm_90` cubins of CUDA 12.9's ptxas.
pub fn find_cuobjdump() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("IXMAP_CUOBJDUMP").map(PathBuf::from) {
        return p.is_file().then_some(p);
    }
    if let Some(p) = in_wheels("cu13", "bin/cuobjdump").into_iter().next() {
        return Some(p);
    }
    if let Some(dir) = find_ptxas().as_deref().and_then(Path::parent) {
        let p = dir.join("cuobjdump");
        if p.is_file() {
            return Some(p);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("cuobjdump"))
        .find(|p| p.is_file())
}

/// Instructions in `cuobjdump -sass` output ([`sass_kernels`], all kernels): lines
/// `/*ADDR*/ OPCODE ... ;`, not the encoding lines `/* 0x... */` beside them nor the `NOP`s
/// that pad a kernel's end to its alignment.
pub fn sass_instructions(listing: &str) -> usize {
    sass_kernels(listing).iter().map(|(_, ins)| ins.len()).sum()
}

/// What a variant's code is: PTX instructions (NVRTC), ptxas's resources for `sm_90`, and
/// SASS instructions when `cuobjdump` is found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CodeStats {
    pub ptx_instructions: usize,
    pub sass_instructions: Option<usize>,
    pub resources: Vec<KernelResources>,
}

impl CodeStats {
    /// `PTX 41 instructions, SASS 38; 18 registers, no spills, 0 bytes of shared memory`.
    pub fn summary(&self) -> String {
        let mut s = format!("PTX {} instructions", self.ptx_instructions);
        if let Some(n) = self.sass_instructions {
            s += &format!(", SASS {n}");
        }
        for k in &self.resources {
            s += &format!("; {}", k.summary());
        }
        s
    }
}

/// [`CodeStats`] of a CUDA source; `None` when NVRTC is not found or rejects it (ptxas and
/// cuobjdump are used when found).
pub fn code_stats(source: &str) -> Option<CodeStats> {
    let nvrtc = shared_nvrtc()?;
    let c = nvrtc
        .compile(source, "kernel.cu", &["--gpu-architecture=compute_90"])
        .ok()?;
    let ptx = c.ptx?;
    let mut st = CodeStats {
        ptx_instructions: ptx_instructions(&ptx),
        ..Default::default()
    };
    if let Some(pt) = find_ptxas() {
        if let Ok(a) = ptxas(&pt, &ptx, "sm_90", &std::env::temp_dir()) {
            st.resources = a.kernels;
        }
        if let Some(dump) = find_cuobjdump() {
            st.sass_instructions = sass_of(&pt, &dump, &ptx);
        }
    }
    Some(st)
}

/// Whether SASS can be counted here: NVRTC, ptxas and a cuobjdump that lists a small
/// kernel (cuobjdump without nvdisasm lists nothing). Tried once a process.
pub fn sass_available() -> bool {
    static OK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *OK.get_or_init(|| {
        let (Some(nvrtc), Some(pt), Some(dump)) = (shared_nvrtc(), find_ptxas(), find_cuobjdump())
        else {
            return false;
        };
        let src = "extern \"C\" __global__ void k(float *p) { p[threadIdx.x] += 1.0f; }\n";
        nvrtc
            .compile(src, "probe.cu", &["--gpu-architecture=compute_90"])
            .ok()
            .and_then(|c| c.ptx)
            .and_then(|ptx| sass_of(&pt, &dump, &ptx))
            .is_some_and(|n| n > 0)
    })
}

/// SASS instructions of `ptx` assembled for `sm_90` into a cubin and listed by cuobjdump.
fn sass_of(pt: &Path, dump: &Path, ptx: &str) -> Option<usize> {
    cuobjdump_sass(pt, dump, ptx)
        .ok()
        .map(|listing| sass_instructions(&listing))
}

/// `cuobjdump -sass` of `ptx` assembled by ptxas for `sm_90` (its raw listing), or what
/// failed.
fn cuobjdump_sass(pt: &Path, dump: &Path, ptx: &str) -> Result<String, String> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir();
    let src = dir.join(format!("ixmap-sass-{}-{n}.ptx", std::process::id()));
    let bin = src.with_extension("cubin");
    std::fs::write(&src, ptx).map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let assembled = Command::new(pt)
        .arg("-arch=sm_90")
        .arg(&src)
        .arg("-o")
        .arg(&bin)
        .output();
    let listing = match assembled {
        Ok(o) if o.status.success() => {
            let mut c = Command::new(dump);
            // nvdisasm beside cuobjdump (the wheels' layout) comes first on its PATH.
            if let Some(dir) = dump.parent().filter(|d| d.join("nvdisasm").is_file()) {
                let mut path = vec![dir.to_path_buf()];
                if let Some(p) = std::env::var_os("PATH") {
                    path.extend(std::env::split_paths(&p));
                }
                if let Ok(p) = std::env::join_paths(path) {
                    c.env("PATH", p);
                }
            }
            c.arg("-sass")
                .arg(&bin)
                .output()
                .map_err(|e| format!("cannot run {}: {e}", dump.display()))
        }
        Ok(o) => Err(format!(
            "ptxas failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run {}: {e}", pt.display())),
    };
    let _ = std::fs::remove_file(&src);
    let _ = std::fs::remove_file(&bin);
    let out = listing?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            dump.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The SASS of a cuobjdump listing, a kernel at a time: `(kernel, instructions)`, each
/// instruction its address and text (`/*0040*/`, `LDG.E.128.CONSTANT R8, desc[UR4][R8.64]`),
/// without the encodings and the `NOP`s that pad a kernel's end.
pub fn sass_kernels(listing: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut out: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for l in listing.lines().map(str::trim) {
        if let Some(name) = l.strip_prefix("Function : ") {
            out.push((name.trim().to_string(), Vec::new()));
            continue;
        }
        let Some(rest) = l.strip_prefix("/*") else {
            continue;
        };
        let Some(end) = rest.find("*/") else {
            continue;
        };
        let addr = &rest[..end];
        if addr.is_empty() || !addr.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        // `OPCODE operands ;   /* 0x... */`: the text up to the `;`.
        let text = rest[end + 2..].split(';').next().unwrap_or("").trim();
        if text.is_empty() || text.starts_with("NOP") {
            continue;
        }
        if out.is_empty() {
            out.push((String::new(), Vec::new()));
        }
        if let Some((_, ins)) = out.last_mut() {
            ins.push((format!("/*{addr}*/"), text.to_string()));
        }
    }
    out
}

/// The SASS a CUDA source assembles to for `sm_90` (NVRTC, ptxas, cuobjdump with
/// nvdisasm), as `//` lines for the end of the source: per kernel its instruction count,
/// then an instruction a line. An error says which tool is missing or what failed.
pub fn sass_comment(source: &str) -> Result<String, String> {
    let nvrtc = shared_nvrtc().ok_or("NVRTC (libnvrtc) is not found")?;
    let pt = find_ptxas().ok_or("ptxas is not found")?;
    let dump = find_cuobjdump().ok_or(
        "cuobjdump is not found (the nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm wheels, \
         or IXMAP_CUOBJDUMP)",
    )?;
    let c = nvrtc.compile(source, "kernel.cu", &["--gpu-architecture=compute_90"])?;
    let ptx = c.ptx.ok_or("NVRTC gave no PTX")?;
    let listing = cuobjdump_sass(&pt, &dump, &ptx)?;
    let kernels = sass_kernels(&listing);
    if kernels.iter().all(|(_, ins)| ins.is_empty()) {
        return Err(format!(
            "{} listed no instructions (is nvdisasm beside it or on the PATH?)",
            dump.display()
        ));
    }
    let mut out = String::new();
    for (name, ins) in kernels {
        out += &format!(
            "// SASS of {name} (cuobjdump, sm_90): {} instructions\n",
            ins.len()
        );
        for (addr, text) in ins {
            out += &format!("//   {addr} {text}\n");
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The header search on a made-up machine in a temporary directory: each place CUDA may
    /// be installed, found in order; the first with `cuda_fp16.h` wins; with none, the
    /// error names every directory searched.
    #[test]
    fn cuda_headers_are_searched_in_order_and_the_error_says_where() {
        let t = std::env::temp_dir().join(format!("ixmap-cuda-include-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&t);
        let header = |d: &Path| {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join("cuda_fp16.h"), "").unwrap();
        };
        let explicit = t.join("explicit");
        std::fs::create_dir_all(&explicit).unwrap(); // set, but without the header
        header(&t.join("home/include"));
        header(&t.join("path-cuda/include"));
        std::fs::create_dir_all(t.join("path-cuda/bin")).unwrap();
        std::fs::write(t.join("path-cuda/bin/nvcc"), "").unwrap();
        header(&t.join("system"));
        let site = t.join("venv/lib/python3.12/site-packages/nvidia");
        header(&site.join("cuda_runtime/include"));
        header(&site.join("cu13/include"));
        let vars: Vec<(&str, std::ffi::OsString)> = vec![
            ("IXMAP_CUDA_INCLUDE", explicit.clone().into()),
            ("CUDA_PATH", t.join("home").into()),
            (
                "PATH",
                std::env::join_paths([t.join("nowhere"), t.join("path-cuda/bin")]).unwrap(),
            ),
        ];
        let env = |v: &str| vars.iter().find(|(k, _)| *k == v).map(|(_, p)| p.clone());
        let system = [t.join("system")];
        let venvs = [t.join("venv")];
        let c = include_candidates(&env, &system, &venvs);
        let dirs: Vec<PathBuf> = c.iter().map(|c| c.dir.clone()).collect();
        assert_eq!(
            dirs,
            vec![
                explicit.clone(),
                t.join("home/include"),
                t.join("path-cuda/include"),
                t.join("system"),
                site.join("cuda_runtime/include"),
                site.join("cu13/include"),
            ]
        );
        assert_eq!(c[1].from, "CUDA_PATH/include");
        assert!(c[2].from.starts_with("beside ") && c[2].from.ends_with("nvcc"));
        // The explicit directory lacks the header: CUDA_PATH's is used.
        assert_eq!(find_cuda_include(&c).unwrap().dir, t.join("home/include"));
        // Then, as each is removed, the next.
        for (gone, next) in [
            (t.join("home/include"), t.join("path-cuda/include")),
            (t.join("path-cuda/include"), t.join("system")),
            (t.join("system"), site.join("cuda_runtime/include")),
            (site.join("cuda_runtime/include"), site.join("cu13/include")),
        ] {
            std::fs::remove_file(gone.join("cuda_fp16.h")).unwrap();
            let found = find_cuda_include(&include_candidates(&env, &system, &venvs)).unwrap();
            assert_eq!(found.dir, next);
        }
        // CUDA_HOME comes before CUDA_PATH.
        header(&t.join("home2/include"));
        let env2 = |v: &str| match v {
            "CUDA_HOME" => Some(t.join("home2").into()),
            _ => env(v),
        };
        let found = find_cuda_include(&include_candidates(&env2, &system, &venvs)).unwrap();
        assert_eq!(
            (found.dir, found.from.as_str()),
            (t.join("home2/include"), "CUDA_HOME/include")
        );
        // None left: the error lists every directory searched.
        std::fs::remove_file(site.join("cu13/include/cuda_fp16.h")).unwrap();
        let e = find_cuda_include(&include_candidates(&env, &system, &venvs)).unwrap_err();
        for d in &dirs {
            assert!(e.contains(&d.display().to_string()), "{e}");
        }
        assert!(e.contains("no directory has cuda_fp16.h"), "{e}");
        let none = find_cuda_include(&include_candidates(&|_| None, &[], &[])).unwrap_err();
        assert!(none.contains("looked in nothing"), "{none}");
        let _ = std::fs::remove_dir_all(&t);
    }

    #[test]
    fn counts_ptx_and_sass_instructions() {
        let ptx = ".version 8.0\n.target sm_90\n.visible .entry k(\n.param .u64 k_param_0\n)\n{\n\t.reg .b32 %r<5>;\n\tld.param.u64 %rd1, [k_param_0];\n\tmov.u32 %r1, %tid.x;\n$L__BB0_1:\n\tst.global.f32 [%rd1], %f1;\n\t// a comment;\n\tret;\n}\n";
        assert_eq!(ptx_instructions(ptx), 4);
        let sass = "\t\tFunction : k\n        /*0000*/                   LDC R1, c[0x0][0x28] ;   /* 0x00000a00ff017b82 */\n                                                            /* 0x000fe20000000800 */\n        /*0010*/                   S2R R0, SR_TID.X ;       /* 0x0000000000007919 */\n        /*0020*/                   EXIT ;                   /* 0x000000000000794d */\n        /*0030*/                   BRA 0x30;                /* 0xfffffffc00fc7947 */\n        /*0040*/                   NOP;                     /* 0x0000000000007918 */\n";
        assert_eq!(sass_instructions(sass), 4);
        // The listing a kernel at a time, each instruction its address and text.
        let two = format!("{sass}\t\tFunction : k2\n        /*0000*/                   EXIT ;                   /* 0x000000000000794d */\n");
        let ks = sass_kernels(&two);
        assert_eq!(ks.len(), 2);
        assert_eq!(ks[0].0, "k");
        assert_eq!(
            ks[0].1.first(),
            Some(&("/*0000*/".to_string(), "LDC R1, c[0x0][0x28]".to_string()))
        );
        assert_eq!(
            ks[0].1.iter().map(|(_, t)| t.as_str()).collect::<Vec<_>>(),
            [
                "LDC R1, c[0x0][0x28]",
                "S2R R0, SR_TID.X",
                "EXIT",
                "BRA 0x30"
            ]
        );
        assert_eq!(
            ks[1],
            ("k2".to_string(), vec![("/*0000*/".into(), "EXIT".into())])
        );
    }

    #[test]
    fn parses_ptxas_verbose_output() {
        let text = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'tr' for 'sm_90'\n\
ptxas info    : Function properties for tr\n\
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
ptxas info    : Used 30 registers, used 1 barriers, 4224 bytes smem, 368 bytes cmem[0]\n\
ptxas warning : Registers are spilled to local memory in function 'tr', 4 bytes spill stores, 12 bytes spill loads\n";
        let (k, d) = parse_ptxas(text);
        assert_eq!(
            k,
            vec![KernelResources {
                name: "tr".into(),
                registers: 30,
                spill_stores: 4,
                spill_loads: 12,
                stack_bytes: 8,
                shared_bytes: 4224,
            }]
        );
        assert_eq!(d.len(), 1);
        assert!(d[0].starts_with("ptxas warning"));
    }
}

/// NVRTC loaded once per process (`None` when it is not found).
pub fn shared_nvrtc() -> Option<&'static Nvrtc> {
    static N: std::sync::OnceLock<Option<Nvrtc>> = std::sync::OnceLock::new();
    N.get_or_init(|| Nvrtc::load().ok()).as_ref()
}

impl KernelResources {
    /// What an H100's SM (`sm_90`) holds of this kernel on blocks of `threads` threads.
    pub fn occupancy(&self, threads: i64) -> Result<super::occupancy::Occupancy, String> {
        super::occupancy::occupancy(
            threads,
            self.registers as i64,
            self.shared_bytes as i64,
            super::occupancy::SmLimits::SM_90,
        )
    }

    /// `30 registers, no spills, 4224 bytes of shared memory` (spills and stack only when
    /// there are some).
    pub fn summary(&self) -> String {
        let mut s = format!("{} registers", self.registers);
        if self.spill_stores + self.spill_loads > 0 {
            s += &format!(
                ", spills {} bytes stored / {} loaded",
                self.spill_stores, self.spill_loads
            );
        } else {
            s += ", no spills";
        }
        if self.stack_bytes > 0 {
            s += &format!(", {} bytes of stack", self.stack_bytes);
        }
        s += &format!(", {} bytes of shared memory", self.shared_bytes);
        s
    }
}

/// What NVIDIA's compilers say about a CUDA source, as `//` lines for the end of the
/// source: per kernel, ptxas's registers, spills and shared memory for `sm_90`; NVRTC's or
/// ptxas's complaints if any. `None` when NVRTC or ptxas is not found.
pub fn resource_comment(source: &str) -> Option<String> {
    resource_comment_for(source, None)
}

/// [`resource_comment`], and for a kernel launched as `(threads a block, blocks)` what an
/// H100's SM holds of it (`gpu::occupancy`): the blocks, the warps, what bounds them, the
/// registers that would let one more block in, and the grid's waves.
pub fn resource_comment_for(source: &str, launch: Option<(i64, i64)>) -> Option<String> {
    let nvrtc = shared_nvrtc()?;
    let pt = find_ptxas()?;
    let mut out = String::new();
    let c = match nvrtc.compile(source, "kernel.cu", &["--gpu-architecture=compute_90"]) {
        Ok(c) => c,
        Err(e) => return Some(format!("// NVRTC: {e}\n")),
    };
    for l in c.log.lines() {
        out += &format!("// NVRTC: {l}\n");
    }
    let Some(ptx) = c.ptx else {
        return Some(out);
    };
    out += &format!(
        "// PTX (NVRTC {}.{}, compute_90): {} instructions\n",
        nvrtc.version.0,
        nvrtc.version.1,
        ptx_instructions(&ptx)
    );
    if let Some(n) = find_cuobjdump().and_then(|d| sass_of(&pt, &d, &ptx)) {
        out += &format!("// SASS (cuobjdump, sm_90): {n} instructions\n");
    }
    match ptxas(&pt, &ptx, "sm_90", &std::env::temp_dir()) {
        Ok(a) => {
            for k in &a.kernels {
                out += &format!(
                    "// ptxas sm_90 (NVRTC {}.{}): {}: {}\n",
                    nvrtc.version.0,
                    nvrtc.version.1,
                    k.name,
                    k.summary()
                );
                if let Some((threads, grid)) = launch {
                    let sms = super::launch::DeviceLimits::H100.sms;
                    out += &match k.occupancy(threads) {
                        Ok(o) => format!(
                            "// occupancy (sm_90, an H100's {sms} SMs): {}; {}\n",
                            o.summary(),
                            o.waves_summary(grid, sms)
                        ),
                        Err(e) => format!("// occupancy (sm_90): cannot launch: {e}\n"),
                    };
                }
            }
            for d in &a.diagnostics {
                out += &format!("// {d}\n");
            }
        }
        Err(e) => out += &format!("// ptxas: {e}\n"),
    }
    if let Some(inc) = &c.include {
        out += &format!("// CUDA headers: {inc}\n");
    }
    Some(out)
}

/// The `sm_90` resources of the kernels in a CUDA source, when NVRTC and ptxas are found
/// and it compiles.
pub fn resources(source: &str) -> Option<Vec<KernelResources>> {
    let nvrtc = shared_nvrtc()?;
    let pt = find_ptxas()?;
    let c = nvrtc
        .compile(source, "kernel.cu", &["--gpu-architecture=compute_90"])
        .ok()?;
    let a = ptxas(&pt, &c.ptx?, "sm_90", &std::env::temp_dir()).ok()?;
    Some(a.kernels)
}
