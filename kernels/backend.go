package kernels

import (
	"fmt"
	"slices"
	"sync"
)

// Backend is the set of numeric kernels the model runs on. Shapes are in
// the argument docs; every kernel writes only its destination, allocates
// nothing, and is deterministic: the same inputs give the same bits, and a
// row's result does not depend on the other rows of its batch
// (batch invariance), so greedy decoding gives the same tokens alone or in
// a batch.
//
// Scratch buffers (work, scores) are passed in by the caller, who keeps
// them across calls, so that no kernel allocates.
type Backend interface {
	// Name identifies the backend and its code path, e.g. "cpu-avx512".
	Name() string

	// MatMulT sets dst = x · wᵀ: dst m×n, x m×k, w n×k (a Hugging Face
	// Linear weight, out × in).
	MatMulT(dst, x, w Mat)
	// MatMul sets dst = x · w: dst m×n, x m×k, w k×n (no transpose, e.g. the
	// absorbed-MLA product q_nope · W_UK).
	MatMul(dst, x, w Mat)

	// RMSNorm sets each row of dst to x_row / sqrt(mean(x_row²) + eps) ⊙ weight.
	RMSNorm(dst, x Mat, weight []float32, eps float32)
	// LayerNorm sets each row of dst to (x_row − mean) / sqrt(var + eps) ⊙
	// weight + bias, with the biased (population) variance.
	LayerNorm(dst, x Mat, weight, bias []float32, eps float32)
	// RoPE rotates each row of x in place by its position pos[i] with
	// interleaved pairs (x[2j], x[2j+1]); x.Cols must equal r.Dim.
	RoPE(x Mat, pos []int32, r *Rope)
	// SwiGLU sets dst = (silu(x · gateᵀ) ⊙ (x · upᵀ)) · downᵀ: x m×h, gate and
	// up I×h, down h×I, dst m×h; work holds at least 2·m·I elements.
	SwiGLU(dst, x, gate, up, down Mat, work []float32)
	// TopK writes the indices (and values, unless val is nil) of the len(idx)
	// largest elements of x, largest first; equal values come in index
	// order and NaN ranks below every number.
	TopK(idx []int32, val []float32, x []float32)
	// FilterGE writes every x[i] ≥ thr and its index i, in order, into vals
	// and idx, and returns how many (NaN never passes).
	FilterGE(vals []float32, idx []int32, x []float32, thr float32) int
	// GatherAttention sets out [dv] to one query's attention over the rows of
	// keys (n×dk) and values (n×dv) that rows names (every row when rows is
	// nil): p = softmax(scale · (q · keys_r)), out = Σ p_r · values_r. It
	// equals dense attention over the same rows, bit for bit. scores holds
	// at least len(rows) elements and is left holding p.
	GatherAttention(out, q []float32, keys, values Mat, rows []int32, scale float32, scores []float32)

	// Add sets dst = a + b elementwise.
	Add(dst, a, b []float32)
	// AddScaled sets dst += alpha · x elementwise.
	AddScaled(dst []float32, alpha float32, x []float32)
	// ReluAXPY sets dst += alpha · max(x, 0) elementwise (DSA's indexer).
	ReluAXPY(dst []float32, alpha float32, x []float32)
	// Sigmoid sets dst = 1 / (1 + e^−x) elementwise.
	Sigmoid(dst, x []float32)
}

var _ Backend = (*CPU)(nil)

var (
	registryMu sync.Mutex
	registry   = map[string]func() (Backend, error){}
)

// Register makes a backend available to Open under name. It panics if the
// name is taken: two backends under one name is a programming error.
func Register(name string, open func() (Backend, error)) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("kernels: backend " + name + " registered twice")
	}
	registry[name] = open
}

// Open returns the backend registered under name: "cpu" (the fastest path
// this machine runs), "cpu-go", "cpu-avx2" or "cpu-avx512", or any name a
// later backend registers.
func Open(name string) (Backend, error) {
	registryMu.Lock()
	open, ok := registry[name]
	registryMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("kernels: no backend %q (have %v)", name, Names())
	}
	return open()
}

// Names returns the registered backend names, sorted.
func Names() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Default returns the CPU backend on the fastest path this machine runs. The
// path is chosen once per process, so every caller gets the same rounding.
func Default() *CPU { return defaultCPU() }

var defaultCPU = sync.OnceValue(func() *CPU {
	c, err := NewCPU(BestPath())
	if err != nil {
		panic(err) // BestPath is supported by construction
	}
	return c
})

func init() {
	Register("cpu", func() (Backend, error) { return Default(), nil })
	for _, p := range []Path{PathGo, PathAVX2, PathAVX512} {
		Register("cpu-"+p.String(), func() (Backend, error) { return NewCPU(p) })
	}
}
