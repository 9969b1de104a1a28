// Package kernels holds the float32 numeric kernels of the reference model:
// matrix products, norms, rotary embedding, the gated MLP, the router's
// sigmoid, top-k selection and gathered (sparse) attention with its
// softmax, behind the Backend interface so that a GPU backend can be added
// without touching model code. It does not import the model.
//
// # Backends and code paths
//
// CPU is the one backend so far. It runs through one of three code paths,
// chosen when it is made:
//
//   - PathAVX512: amd64 assembly for AVX-512 (F, VL), 16 lanes;
//   - PathAVX2: amd64 assembly for AVX2 with FMA, 8 lanes;
//   - PathGo: portable Go, the fallback everywhere else.
//
// Default (and Open("cpu")) picks the fastest path the CPU supports, once
// per process, using golang.org/x/sys/cpu. NewCPU(p) or Open("cpu-avx2") and
// the like force a path; the tests use them to check every path the machine
// has against naive references. Building with the tag purego leaves the
// assembly out, so only PathGo exists.
//
// # Determinism and batch invariance
//
// Each output element is reduced in one fixed order that depends only on
// the reduction length, never on the batch size, the tile a row falls in, or
// how the work is split over cores (see matmul.go). A row's result is
// therefore bit-identical whether it is computed alone or among hundreds, and
// greedy decoding gives the same tokens alone or in a batch. Paths differ
// from each other by float32 rounding in the sums of products (the
// elementwise kernels, e^x, sigmoid, SiLU and softmax, give the same bits on
// every path), which is why a process keeps one path.
//
// # Allocation and threads
//
// No kernel allocates: scratch space (SwiGLU's work, GatherAttention's
// scores) is passed in by the caller, who keeps it across calls. Products
// above 2^17 multiply-adds are split between the calling goroutine and a
// process-wide pool of GOMAXPROCS−1 worker goroutines (counted at first
// use) that spin briefly between jobs and then park.
//
// Shapes follow Hugging Face: a Linear weight is out × in, row-major, and
// y = x · Wᵀ is MatMulT. Mat is a row-major view with a stride, so a head's
// columns of a wider buffer can be passed without copying.
package kernels
