//! The runtime of `src/gpu/cuda_on_cpu.h` on hand-written kernels: a block's threads as
//! fibers meeting at `__syncthreads()` and at warp shuffles (partial last warps, several
//! blocks in both grid dimensions), and a thread that misses a barrier reported as a
//! deadlock rather than a hang.

use ixmap::gpu::cuda_cpu::{compiler, HEADER};
use std::ffi::{c_char, c_void, CStr};

fn has_cxx() -> bool {
    std::process::Command::new(compiler())
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Compiles `kernels` after the header, with `launch` the body of
/// `extern "C" const char *ix_launch(void **args)`, and runs it on `args`: the launch's
/// message, if it stopped.
fn run(kernels: &str, launch: &str, args: &mut [*mut c_void]) -> Option<String> {
    let dir = std::env::temp_dir().join(format!("ixmap-fibers-{}-{}", std::process::id(), {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    }));
    std::fs::create_dir_all(&dir).unwrap();
    let (cc, so) = (dir.join("k.cpp"), dir.join("k.so"));
    std::fs::write(
        &cc,
        format!("{HEADER}\n{kernels}\nextern \"C\" const char *ix_launch(void **args) {{\n{launch}\n}}\n"),
    )
    .unwrap();
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
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // SAFETY: just compiled from the header and `kernels`; it exports `ix_launch`.
    let lib = unsafe { libloading::Library::new(&so) }.unwrap();
    type Launch = unsafe extern "C" fn(*mut *mut c_void) -> *const c_char;
    let f: Launch = unsafe { *lib.get::<Launch>(b"ix_launch").unwrap() };
    // SAFETY: `args` are the buffers the launch body reads and writes.
    let m = unsafe { f(args.as_mut_ptr()) };
    let m = (!m.is_null()).then(|| unsafe { CStr::from_ptr(m) }.to_string_lossy().into_owned());
    let _ = std::fs::remove_dir_all(&dir);
    m
}

/// Each warp of 80-thread blocks reverses its lanes through shared memory, then sums them
/// with `__shfl_down_sync` (lane 0) and `__shfl_xor_sync` (every lane), over a 3 x 2 grid.
#[test]
fn barriers_and_shuffles_over_blocks_and_partial_warps() {
    if !has_cxx() {
        assert!(std::env::var("CI").is_err(), "CI and no C++ compiler");
        eprintln!("*** SKIPPED: no C++ compiler");
        return;
    }
    const BLOCK: usize = 80;
    const BLOCKS: usize = 6;
    let kernels = "
__global__ void k(const int *in, int *down, int *xr) {
  __shared__ int s[80];
  const unsigned t = threadIdx.x, b = blockIdx.y * gridDim.x + blockIdx.x;
  s[t] = in[b * blockDim.x + t];
  __syncthreads();
  const unsigned w = t / 32 * 32, lanes = blockDim.x - w < 32 ? blockDim.x - w : 32;
  int v = s[w + (lanes - 1 - t % 32)];
  __syncthreads();
  int d = v, x = v;
  for (int off = 16; off > 0; off /= 2) d += __shfl_down_sync(0xffffffffu, d, off);
  for (int off = 16; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
  down[b * blockDim.x + t] = d;
  xr[b * blockDim.x + t] = x;
}";
    let launch = "return ix_launch_grid(3, 2, 80, [&] { k((const int *)args[0], (int *)args[1], (int *)args[2]); });";
    let input: Vec<i32> = (0..BLOCK * BLOCKS).map(|i| (i * 7 % 23) as i32).collect();
    let mut down = vec![-1i32; input.len()];
    let mut xr = vec![-1i32; input.len()];
    let mut args = [
        input.as_ptr() as *mut c_void,
        down.as_mut_ptr() as *mut c_void,
        xr.as_mut_ptr() as *mut c_void,
    ];
    assert_eq!(run(kernels, launch, &mut args), None);
    for b in 0..BLOCKS {
        for w in (0..BLOCK).step_by(32) {
            let lanes = (BLOCK - w).min(32);
            let base = b * BLOCK + w;
            // The reversed warp's values, then the two trees as a GPU runs them.
            let v: Vec<i32> = (0..lanes).map(|l| input[base + lanes - 1 - l]).collect();
            let mut d = v.clone();
            let mut x = v.clone();
            let mut off = 16;
            while off > 0 {
                d = (0..lanes)
                    .map(|l| d[l] + if l + off < lanes { d[l + off] } else { d[l] })
                    .collect();
                x = (0..lanes)
                    .map(|l| x[l] + if l ^ off < lanes { x[l ^ off] } else { x[l] })
                    .collect();
                off /= 2;
            }
            assert_eq!(&down[base..base + lanes], &d[..], "block {b} warp {w} down");
            assert_eq!(&xr[base..base + lanes], &x[..], "block {b} warp {w} xor");
        }
    }
}

/// A thread that returns before a `__syncthreads()` the others wait at, or waits at another
/// barrier than its warp's shuffle: the launch stops and says which threads did what.
#[test]
fn a_divergent_barrier_is_reported_as_a_deadlock() {
    if !has_cxx() {
        assert!(std::env::var("CI").is_err(), "CI and no C++ compiler");
        eprintln!("*** SKIPPED: no C++ compiler");
        return;
    }
    let kernels = "
__global__ void early(int *out) {
  if (blockIdx.x == 1 && threadIdx.x >= 40) return;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1;
}
__global__ void mixed(int *out) {
  int v = threadIdx.x;
  if (threadIdx.x < 16) v = __shfl_down_sync(0xffffffffu, v, 1); else __syncthreads();
  out[threadIdx.x] = v;
}";
    let mut out = vec![0i32; 4 * 128];
    let mut args = [out.as_mut_ptr() as *mut c_void];
    let m = run(
        kernels,
        "return ix_launch_grid(4, 1, 128, [&] { early((int *)args[0]); });",
        &mut args,
    )
    .expect("a deadlock");
    assert_eq!(
        m,
        "deadlock in block (1, 0) of 128 threads: a barrier waits for threads that never \
         reach it; threads 40-127 returned; threads 0-39 wait at __syncthreads()"
    );
    // Block 0 ran to its end before block 1 stopped.
    assert!(out[..128].iter().all(|&v| v == 1));
    let m = run(
        kernels,
        "return ix_launch_grid(1, 1, 64, [&] { mixed((int *)args[0]); });",
        &mut args,
    )
    .expect("a deadlock");
    assert_eq!(
        m,
        "deadlock in block (0, 0) of 64 threads: a barrier waits for threads that never \
         reach it; threads 16-63 wait at __syncthreads(); threads 0-15 wait at a shuffle of \
         their warp (__shfl_*_sync)"
    );
}
