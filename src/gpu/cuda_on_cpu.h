// CUDA on the CPU: enough of CUDA for ixmap's emitted kernels to compile with the host C++
// compiler and run, unchanged, with the threads of a block as real threads.
//
// - the threads of one block are real threads, started once per launch; they run the
//   blocks one after another, meeting at a barrier between blocks (so no thread touches a
//   block's shared memory while another still uses the previous block's);
// - threadIdx and blockIdx are per thread (thread_local); blockDim and gridDim are set
//   before the threads start;
// - __shared__ is `static`: one copy, shared by the threads of the running block;
// - __syncthreads() is a barrier of the block's threads;
// - float4, int4, uint4, double2, longlong2, ulonglong2: 16-byte aligned structs;
// - __half / __nv_bfloat16: 16 bits with bit-exact round-to-nearest-even conversions;
// - atomicAdd / atomicCAS on the host's atomic builtins;
// - __shfl_down_sync(mask, v, d): lane i gets lane i + d's value (its own when i + d is past
//   the warp), through a buffer and two barriers, so every thread of the block must call it
//   (as every thread of ixmap's row reductions does); __shfl_xor_sync likewise.
// Only C headers (pthreads, not <thread>): the kernel compiles in a fraction of the time.
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define __global__
#define __device__
#define __shared__ static
#define __launch_bounds__(n)

struct ix_uint3 { unsigned x, y, z; };

// CUDA's 16-byte vector types (the kernels' 128-bit loads and stores).
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(16) longlong2 { long long x, y; };
struct alignas(16) ulonglong2 { unsigned long long x, y; };
static thread_local ix_uint3 threadIdx, blockIdx;
static ix_uint3 blockDim, gridDim;

class ix_barrier {
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
  unsigned n, waiting = 0, generation = 0;
public:
  explicit ix_barrier(unsigned count) : n(count) {}
  ~ix_barrier() { pthread_cond_destroy(&cv); pthread_mutex_destroy(&m); }
  void wait() {
    pthread_mutex_lock(&m);
    unsigned gen = generation;
    if (++waiting == n) {
      waiting = 0;
      ++generation;
      pthread_cond_broadcast(&cv);
    } else {
      while (gen == generation) pthread_cond_wait(&cv, &m);
    }
    pthread_mutex_unlock(&m);
  }
};
static ix_barrier *ix_block_barrier;

static inline void __syncthreads() { ix_block_barrier->wait(); }

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

template <class T> static T __shfl_down_sync(unsigned, T v, int delta) {
  static T buf[1024];
  const unsigned t = threadIdx.x, lane = t % 32;
  buf[t] = v;
  __syncthreads();
  T r = (lane + delta < 32 && t + delta < blockDim.x) ? buf[t + delta] : v;
  __syncthreads();
  return r;
}

// __shfl_xor_sync(mask, v, d): lane i gets lane (i xor d)'s value (its own when that thread
// is past the block), the butterfly the row normalizations use so every lane of a row ends
// with the row's value; every thread of the block must call it, as for __shfl_down_sync.
template <class T> static T __shfl_xor_sync(unsigned, T v, int delta) {
  static T buf[1024];
  const unsigned t = threadIdx.x, other = t ^ (unsigned)delta;
  buf[t] = v;
  __syncthreads();
  T r = (other / 32 == t / 32 && other < blockDim.x) ? buf[other] : v;
  __syncthreads();
  return r;
}

template <class F> struct ix_thread_arg {
  F *kernel;
  unsigned t, grid, grid_y;
};

template <class F> static void *ix_thread_main(void *p) {
  ix_thread_arg<F> *a = static_cast<ix_thread_arg<F> *>(p);
  threadIdx = {a->t, 0, 0};
  for (unsigned y = 0; y < a->grid_y; ++y) {
    for (unsigned b = 0; b < a->grid; ++b) {
      blockIdx = {b, y, 0};
      (*a->kernel)();
      ix_block_barrier->wait();
    }
  }
  return nullptr;
}

// Runs `kernel` over a grid of `grid` x `grid_y` 1-D blocks (at most 1024 threads per
// block), one block at a time, x fastest.
template <class F>
static void ix_launch_grid(unsigned grid, unsigned grid_y, unsigned block, F kernel) {
  gridDim = {grid, grid_y, 1};
  blockDim = {block, 1, 1};
  ix_barrier bar(block);
  ix_block_barrier = &bar;
  static pthread_t threads[1024];
  static ix_thread_arg<F> args[1024];
  for (unsigned t = 0; t < block; ++t) {
    args[t] = {&kernel, t, grid, grid_y};
    // Without all of a block's threads the barrier never opens: stop rather than hang.
    if (pthread_create(&threads[t], nullptr, ix_thread_main<F>, &args[t]) != 0) abort();
  }
  for (unsigned t = 0; t < block; ++t) pthread_join(threads[t], nullptr);
}
