// CUDA on the CPU: enough of CUDA for ixmap's emitted kernels to compile with the host C++
// compiler and run, unchanged, with the threads of a block as fibers on the calling thread.
//
// - the threads of one block are fibers (user-space threads, each on its own stack),
//   started once per launch and run one at a time on the thread that launches; they run
//   the blocks one after another: a fiber runs until it waits (at __syncthreads(), at a
//   shuffle) or ends its block, then the next fiber that can go on runs. A switch is
//   _setjmp/_longjmp (no system call; makecontext/setcontext only start a fiber);
// - threadIdx and blockIdx are plain globals, set to the running fiber's at every switch;
//   blockDim and gridDim are set before the fibers start;
// - __shared__ is `static`: one copy, used by the fibers of the running block (blocks
//   never overlap);
// - __syncthreads() is a barrier of the block's threads: every thread must reach one;
// - __shfl_down_sync(mask, v, d): lane i gets lane i + d's value (its own when i + d is past
//   the warp or the block); __shfl_xor_sync(mask, v, d): lane i gets lane (i xor d)'s (its
//   own when that thread is past the block). A shuffle is a barrier of its warp (the
//   block's 32 threads from 32 w, fewer in a last partial warp): every thread of the warp
//   must call it (the mask is taken to be the whole warp, as ixmap's kernels pass);
// - a thread that never reaches a barrier its block (or warp) waits at — it returned, or
//   it waits at another barrier — deadlocks the block: the launch stops and ix_launch_grid
//   returns a message naming the block and its threads' states (a GPU would hang or run
//   on undefined);
// - a fiber's stack is 64 KiB under a guard page (an overflow faults, rather than writing
//   into the next fiber's stack);
// - float4, int4, uint4, double2, longlong2, ulonglong2: 16-byte aligned structs; float2,
//   int2, uint2: 8-byte aligned ones;
// - __half / __nv_bfloat16: 16 bits with bit-exact round-to-nearest-even conversions;
// - atomicAdd / atomicCAS on the host's atomic builtins.
// Only C headers (not <thread>): the kernel compiles in a fraction of the time.
//
// _longjmp from one fiber's stack to another's is what the fortified glibc longjmp
// (__longjmp_chk, under the _FORTIFY_SOURCE that distributions' compilers define) rejects
// as "longjmp causes uninitialized stack frame": not fortified, before any system header.
#undef _FORTIFY_SOURCE
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define __global__
#define __device__
#define __shared__ static
#define __launch_bounds__(n)
// The kernels tell NVRTC their ids' ranges; a C++ compiler without the builtin skips it.
#if !defined(__clang__)
#define __builtin_assume(c) ((void)0)
#endif
#define __align__(n) __attribute__((aligned(n)))

struct ix_uint3 { unsigned x, y, z; };

// CUDA's 16-byte vector types (the kernels' 128-bit loads and stores).
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(16) longlong2 { long long x, y; };
struct alignas(16) ulonglong2 { unsigned long long x, y; };
struct alignas(8) float2 { float x, y; };
struct alignas(8) int2 { int x, y; };
struct alignas(8) uint2 { unsigned x, y; };
static ix_uint3 threadIdx, blockIdx;
static ix_uint3 blockDim, gridDim;

// The fibers of a launch: one per thread of a block, each looping over the grid's blocks.
// A fiber's state: ready (running or able to run), waiting at the block's barrier or at its
// warp's (`gen` the barrier's generation when it arrived: the barrier has opened once that
// generation moved on), or done with the block.
enum { IX_READY, IX_BARRIER, IX_WARP, IX_DONE };
struct ix_fiber {
  jmp_buf ctx;
  unsigned state, gen;
  bool started;
};
static struct {
  ix_fiber *fibers;
  unsigned n, cur, done;                  // fibers, the running one, those done with the block
  unsigned arrived, gen;                  // the block's barrier
  unsigned warp_arrived[32], warp_gen[32];  // each warp's (a shuffle)
  unsigned grid, grid_y;
  char *stacks;
  size_t stack_bytes, slot_bytes;         // a stack, and a stack with its guard page
  void (*run)(void *);                    // the kernel, for the running block and fiber
  void *kernel;
  jmp_buf home;                           // the launching thread: back there when done
  const char *error;
  char message[1024];
} ix_s;

static void ix_fiber_main();

// Switches to fiber `next` (from a fiber, whose context is saved, or from the launch).
static void ix_enter(unsigned next) {
  ix_s.cur = next;
  threadIdx.x = next;
  ix_fiber *f = &ix_s.fibers[next];
  if (f->started) _longjmp(f->ctx, 1);
  f->started = true;
  ucontext_t uc;
  getcontext(&uc);
  uc.uc_stack.ss_sp = ix_s.stacks + (size_t)next * ix_s.slot_bytes + (ix_s.slot_bytes - ix_s.stack_bytes);
  uc.uc_stack.ss_size = ix_s.stack_bytes;
  uc.uc_link = nullptr;
  makecontext(&uc, ix_fiber_main, 0);
  setcontext(&uc);
  abort();  // setcontext returns only when it fails
}

static __attribute__((noinline)) void ix_switch(unsigned next) {
  if (next != ix_s.cur && _setjmp(ix_s.fibers[ix_s.cur].ctx) == 0) ix_enter(next);
}

static inline bool ix_can_run(unsigned i) {
  const ix_fiber &f = ix_s.fibers[i];
  switch (f.state) {
  case IX_READY: return true;
  case IX_BARRIER: return f.gen != ix_s.gen;
  case IX_WARP: return f.gen != ix_s.warp_gen[i / 32];
  default: return false;
  }
}

static void ix_append(const char *format, unsigned a, unsigned b = 0) {
  const size_t len = strlen(ix_s.message);
  snprintf(ix_s.message + len, sizeof ix_s.message - len, format, a, b);
}

// `; threads a-b, c returned`: the fibers in `state` (at most 8 ranges), after the message.
static void ix_list_threads(unsigned state, const char *what) {
  unsigned ranges = 0, count = 0;
  for (unsigned i = 0; i < ix_s.n; ++i) count += ix_s.fibers[i].state == state;
  if (count == 0) return;
  ix_append(count == 1 ? "; thread " : "; threads ", 0);
  for (unsigned i = 0; i < ix_s.n; ++i) {
    if (ix_s.fibers[i].state != state || (i > 0 && ix_s.fibers[i - 1].state == state)) continue;
    unsigned j = i;
    while (j + 1 < ix_s.n && ix_s.fibers[j + 1].state == state) ++j;
    if (++ranges > 8) {
      ix_append(", ...", 0);
      break;
    }
    ix_append(ranges > 1 ? ", " : "", 0);
    ix_append(j == i ? "%u" : "%u-%u", i, j);
  }
  const size_t len = strlen(ix_s.message);
  snprintf(ix_s.message + len, sizeof ix_s.message - len, " %s", what);
}

// No fiber of the block can go on, and not all are done: a thread missed a barrier.
static void ix_deadlock() {
  snprintf(ix_s.message, sizeof ix_s.message,
           "deadlock in block (%u, %u) of %u threads: a barrier waits for threads that never "
           "reach it",
           blockIdx.x, blockIdx.y, ix_s.n);
  ix_list_threads(IX_DONE, "returned");
  ix_list_threads(IX_BARRIER, "wait at __syncthreads()");
  ix_list_threads(IX_WARP, "wait at a shuffle of their warp (__shfl_*_sync)");
  ix_s.error = ix_s.message;
  _longjmp(ix_s.home, 1);
}

// The running fiber has stopped (its state says why): runs the next fiber that can.
static void ix_yield() {
  const unsigned n = ix_s.n, cur = ix_s.cur;
  for (unsigned i = cur + 1 == n ? 0 : cur + 1;; i = i + 1 == n ? 0 : i + 1) {
    if (ix_can_run(i)) {
      ix_switch(i);
      ix_s.fibers[ix_s.cur].state = IX_READY;
      return;
    }
    if (i == cur) ix_deadlock();
  }
}

static inline void __syncthreads() {
  ix_fiber &f = ix_s.fibers[ix_s.cur];
  f.state = IX_BARRIER;
  f.gen = ix_s.gen;
  if (++ix_s.arrived == ix_s.n) {
    ix_s.arrived = 0;
    ++ix_s.gen;
  }
  ix_yield();
}

// Waits for every thread of the running fiber's warp to arrive.
static void ix_warp_sync() {
  const unsigned t = ix_s.cur, w = t / 32, lanes = ix_s.n - w * 32 < 32 ? ix_s.n - w * 32 : 32;
  ix_fiber &f = ix_s.fibers[t];
  const unsigned gen = ix_s.warp_gen[w];
  f.state = IX_WARP;
  f.gen = gen;
  if (++ix_s.warp_arrived[w] == lanes) {
    ix_s.warp_arrived[w] = 0;
    ++ix_s.warp_gen[w];
  }
  ix_yield();
}

// The running fiber is done with its block: the next fiber runs, or, after the last, the
// next block starts at thread 0 (or the launch returns after the last block).
static void ix_block_done() {
  ix_s.fibers[ix_s.cur].state = IX_DONE;
  if (++ix_s.done < ix_s.n) {
    ix_yield();
    return;
  }
  ix_s.done = 0;
  if (++blockIdx.x == ix_s.grid) {
    blockIdx.x = 0;
    if (++blockIdx.y == ix_s.grid_y) _longjmp(ix_s.home, 1);
  }
  for (unsigned i = 0; i < ix_s.n; ++i) ix_s.fibers[i].state = IX_READY;
  ix_switch(0);
}

static void ix_fiber_main() {
  for (;;) {
    ix_s.run(ix_s.kernel);
    ix_block_done();
  }
}

static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }

// The 16-bit float types as their bits, with the conversions the emitted kernels call,
// rounding to nearest even bit for bit as the GPU does (cuda_fp16.h, cuda_bf16.h). The
// kernel's `#include <cuda_fp16.h>` and `<cuda_bf16.h>` find empty files of ours.
struct __half { unsigned short x; };
struct __nv_bfloat16 { unsigned short x; };
static inline float __half2float(__half h) {
  const unsigned s = (unsigned)(h.x & 0x8000u) << 16, e = (h.x >> 10) & 0x1fu, m = h.x & 0x3ffu;
  if (e == 0) { const float f = (float)m * 5.9604644775390625e-8f; return s ? -f : f; }
  return __int_as_float((int)(s | (e == 31 ? 0x7f800000u | (m << 13) : ((e + 112u) << 23) | (m << 13))));
}
static inline __half __float2half_rn(float f) {
  const unsigned u = (unsigned)__float_as_int(f), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  __half h;
  if (a > 0x7f800000u) { h.x = (unsigned short)(s | 0x7e00u); return h; }
  if (a >= 0x477ff000u) { h.x = (unsigned short)(s | 0x7c00u); return h; }  // from 65520: inf
  if (a < 0x38800000u) {  // below 2^-14: a subnormal, m * 2^-24
    const float x = __int_as_float((int)a) * 16777216.0f;
    unsigned i = (unsigned)x;
    const float r = x - (float)i;
    if (r > 0.5f || (r == 0.5f && (i & 1u))) ++i;
    h.x = (unsigned short)(s | i);
    return h;
  }
  h.x = (unsigned short)(s | ((a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u) >> 13));
  return h;
}
static inline float __bfloat162float(__nv_bfloat16 h) { return __int_as_float((int)((unsigned)h.x << 16)); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  const unsigned u = (unsigned)__float_as_int(f);
  __nv_bfloat16 h;
  h.x = (u & 0x7fffffffu) > 0x7f800000u ? (unsigned short)((u >> 16) | 0x40u)
                                        : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return h;
}
static inline unsigned short __half_as_ushort(__half h) { return h.x; }
static inline __half __ushort_as_half(unsigned short u) { __half h; h.x = u; return h; }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { __nv_bfloat16 h; h.x = u; return h; }
static inline double __longlong_as_double(long long i) { double f; memcpy(&f, &i, 8); return f; }

static inline long long __double_as_longlong(double f) { long long i; memcpy(&i, &f, 8); return i; }

// Bit counts (popcnt, count-leading-zeros): __clz and __clzll count 32 and 64 for 0, as on
// the GPU (GCC's builtins are undefined there).
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }

// Atomics (a scatter's combining stores), on the host's atomics (GCC's __atomic builtins):
// atomicCAS returns the value it found, atomicAdd the value before the add.
static inline int atomicCAS(int *a, int expected, int desired) {
  __atomic_compare_exchange_n(a, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;
}
static inline unsigned atomicCAS(unsigned *a, unsigned expected, unsigned desired) {
  __atomic_compare_exchange_n(a, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;
}
static inline unsigned long long atomicCAS(unsigned long long *a, unsigned long long expected,
                                           unsigned long long desired) {
  __atomic_compare_exchange_n(a, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return expected;
}
static inline int atomicAdd(int *a, int v) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }
static inline float atomicAdd(float *a, float v) {
  int *p = (int *)a;
  int old = __atomic_load_n(p, __ATOMIC_SEQ_CST), seen;
  do {
    seen = old;
    old = atomicCAS(p, seen, __float_as_int(__int_as_float(seen) + v));
  } while (seen != old);
  return __int_as_float(seen);
}
static inline double atomicAdd(double *a, double v) {
  unsigned long long *p = (unsigned long long *)a;
  unsigned long long old = __atomic_load_n(p, __ATOMIC_SEQ_CST), seen;
  do {
    seen = old;
    old = atomicCAS(p, seen, (unsigned long long)__double_as_longlong(__longlong_as_double(seen) + v));
  } while (seen != old);
  return __longlong_as_double(seen);
}

// A shuffle: each lane writes its value into the buffer of this wait's parity (a lane
// through the warp's barrier may shuffle again before the others have read: into the other
// buffer), waits for its warp, and reads its source lane's.
template <class T> static T __shfl_down_sync(unsigned, T v, int delta) {
  static T buf[2][1024];
  const unsigned t = threadIdx.x, lane = t % 32;
  T *b = buf[ix_s.warp_gen[t / 32] & 1];
  b[t] = v;
  ix_warp_sync();
  return (lane + delta < 32 && t + delta < blockDim.x) ? b[t + delta] : v;
}

// The butterfly the row normalizations use, so every lane of a row ends with the row's
// value.
template <class T> static T __shfl_xor_sync(unsigned, T v, int delta) {
  static T buf[2][1024];
  const unsigned t = threadIdx.x, other = t ^ (unsigned)delta;
  T *b = buf[ix_s.warp_gen[t / 32] & 1];
  b[t] = v;
  ix_warp_sync();
  return (other / 32 == t / 32 && other < blockDim.x) ? b[other] : v;
}

// Runs `kernel` over a grid of `grid` x `grid_y` 1-D blocks (at most 1024 threads per
// block), one block at a time, x fastest; returns null, or why the launch stopped (a
// deadlock; a block too large; no memory for the stacks).
template <class F>
static const char *ix_launch_grid(unsigned grid, unsigned grid_y, unsigned block, F kernel) {
  gridDim = {grid, grid_y, 1};
  blockDim = {block, 1, 1};
  blockIdx = {0, 0, 0};
  threadIdx = {0, 0, 0};
  if (block == 0 || block > 1024) return "a block of 1 to 1024 threads runs on the CPU";
  if (grid == 0 || grid_y == 0) return nullptr;
  memset(&ix_s, 0, sizeof ix_s);
  ix_s.n = block;
  ix_s.grid = grid;
  ix_s.grid_y = grid_y;
  ix_s.run = [](void *k) { (*static_cast<F *>(k))(); };
  ix_s.kernel = &kernel;
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  ix_s.stack_bytes = (64 * 1024 + page - 1) / page * page;
  ix_s.slot_bytes = ix_s.stack_bytes + page;
  const size_t bytes = ix_s.slot_bytes * block;
  void *stacks = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ix_s.fibers = static_cast<ix_fiber *>(calloc(block, sizeof(ix_fiber)));
  if (stacks == MAP_FAILED || !ix_s.fibers) {
    if (stacks != MAP_FAILED) munmap(stacks, bytes);
    free(ix_s.fibers);
    return "no memory for the threads' stacks";
  }
  ix_s.stacks = static_cast<char *>(stacks);
  // Below each stack (stacks grow down) a page no access: an overflow faults.
  for (unsigned t = 0; t < block; ++t) mprotect(ix_s.stacks + (size_t)t * ix_s.slot_bytes, page, PROT_NONE);
  if (_setjmp(ix_s.home) == 0) ix_enter(0);
  munmap(stacks, bytes);
  free(ix_s.fibers);
  return ix_s.error;
}
