// CUDA on the CPU: enough of CUDA for ixmap's emitted kernels to compile with the host C++
// compiler and run, unchanged, with the threads of a block as real threads.
//
// - threadIdx is per thread (thread_local); blockIdx, blockDim and gridDim are set before
//   a block's threads start, and blocks run one after another;
// - __shared__ is `static`: one copy, shared by the threads of the running block;
// - __syncthreads() is a barrier of the block's threads;
// - __shfl_down_sync(mask, v, d): lane i gets lane i + d's value (its own when i + d is past
//   the warp), through a buffer and two barriers, so every thread of the block must call it
//   (as every thread of ixmap's row reductions does).
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>
#include <mutex>
#include <condition_variable>

#define __global__
#define __device__
#define __shared__ static
#define __launch_bounds__(n)

struct ix_uint3 { unsigned x, y, z; };
static thread_local ix_uint3 threadIdx;
static ix_uint3 blockIdx, blockDim, gridDim;

class ix_barrier {
  std::mutex m;
  std::condition_variable cv;
  unsigned n, waiting = 0, generation = 0;
public:
  explicit ix_barrier(unsigned count) : n(count) {}
  void wait() {
    std::unique_lock<std::mutex> lock(m);
    unsigned gen = generation;
    if (++waiting == n) {
      waiting = 0;
      ++generation;
      cv.notify_all();
    } else {
      cv.wait(lock, [&] { return gen != generation; });
    }
  }
};
static ix_barrier *ix_block_barrier;

static inline void __syncthreads() { ix_block_barrier->wait(); }

static inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static inline double __longlong_as_double(long long i) { double f; std::memcpy(&f, &i, 8); return f; }

template <class T> static T __shfl_down_sync(unsigned, T v, int delta) {
  static T buf[1024];
  const unsigned t = threadIdx.x, lane = t % 32;
  buf[t] = v;
  __syncthreads();
  T r = (lane + delta < 32 && t + delta < blockDim.x) ? buf[t + delta] : v;
  __syncthreads();
  return r;
}

// Runs `kernel` over a 1-D grid of 1-D blocks.
template <class F> static void ix_launch_grid(unsigned grid, unsigned block, F kernel) {
  gridDim = {grid, 1, 1};
  blockDim = {block, 1, 1};
  for (unsigned b = 0; b < grid; ++b) {
    blockIdx = {b, 0, 0};
    ix_barrier bar(block);
    ix_block_barrier = &bar;
    std::vector<std::thread> threads;
    threads.reserve(block);
    for (unsigned t = 0; t < block; ++t) {
      threads.emplace_back([t, &kernel] {
        threadIdx = {t, 0, 0};
        kernel();
      });
    }
    for (auto &th : threads) th.join();
  }
}
