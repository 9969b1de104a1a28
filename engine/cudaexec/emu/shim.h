// shim.h: what the emulator defines so that kernels.cu compiles as C++ and
// runs on the CPU. A launch runs its blocks one after another, each with
// blockDim threads (std::thread), so a function-static array is exactly
// one block's __shared__ memory and __syncthreads is a std::barrier over
// the block's threads.
#pragma once
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>

#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static

struct emu_dim3 {
    unsigned x, y, z;
};

thread_local emu_dim3 threadIdx, blockIdx;
emu_dim3 blockDim, gridDim;

// emu_block_barrier is the running block's barrier, set for each launch.
std::barrier<>* emu_block_barrier;

inline void __syncthreads() { emu_block_barrier->arrive_and_wait(); }

inline float __int_as_float(int v) {
    float f;
    std::memcpy(&f, &v, 4);
    return f;
}
inline int __float_as_int(float f) {
    int v;
    std::memcpy(&v, &f, 4);
    return v;
}
// expf, fmaf, fmaxf, sqrtf and sqrt are <cmath>'s, in the global namespace.
// The _rn intrinsics round each operation on its own (the harness is
// built with -ffp-contract=off, so nothing fuses them).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
