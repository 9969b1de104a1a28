package kernels

import "fmt"

// Path names one implementation of the CPU kernels. All paths compute the
// same functions; they differ in speed and in float32 rounding, because each
// sums a dot product in its own (fixed) order.
type Path int

const (
	// PathGo is portable Go: the reference for the others and the fallback
	// on machines and builds (tag purego) without the assembly.
	PathGo Path = iota
	// PathAVX2 is amd64 assembly for AVX2 with FMA, 8 float32 lanes.
	PathAVX2
	// PathAVX512 is amd64 assembly for AVX-512 (F and VL), 16 float32 lanes.
	PathAVX512
)

func (p Path) String() string {
	switch p {
	case PathGo:
		return "go"
	case PathAVX2:
		return "avx2"
	case PathAVX512:
		return "avx512"
	}
	return fmt.Sprintf("Path(%d)", int(p))
}

// Supported reports whether this machine and build can run p.
func (p Path) Supported() bool {
	switch p {
	case PathGo:
		return true
	case PathAVX2:
		return hasAVX2
	case PathAVX512:
		return hasAVX512
	}
	return false
}

// Paths returns the paths this machine can run, slowest first.
func Paths() []Path {
	var ps []Path
	for _, p := range []Path{PathGo, PathAVX2, PathAVX512} {
		if p.Supported() {
			ps = append(ps, p)
		}
	}
	return ps
}

// BestPath returns the fastest path this machine can run.
func BestPath() Path {
	ps := Paths()
	return ps[len(ps)-1]
}

// CPU is the Backend that runs on the host's cores through one Path. Large
// matrix products are split between the calling goroutine and a
// process-wide pool of workers (GOMAXPROCS−1 of them, counted at first use);
// results do not depend on the split. A CPU is safe for concurrent use.
type CPU struct {
	path Path
	pool *pool
	// Products of more than parallelMACs multiply-adds are split over the
	// pool; smaller ones run on the calling goroutine alone, because handing
	// work to a worker would cost more than it saves.
	parallelMACs int
}

// defaultParallelMACs and minChunkMACs come from BenchmarkMatMulTSplit on 2
// idle cores (AVX-512): handing a chunk to a worker and waiting for it costs
// about a microsecond, so a split pays once each chunk has a few µs of work,
// from about 2^17 multiply-adds for wide products (docs/PERFORMANCE.md,
// "Code paths, splitting, other kernels").
const (
	defaultParallelMACs = 1 << 17
	minChunkMACs        = 1 << 16
)

// NewCPU returns a CPU backend on path p, or an error if this machine or
// build cannot run it.
func NewCPU(p Path) (*CPU, error) {
	if !p.Supported() {
		return nil, fmt.Errorf("kernels: code path %v is not supported on this machine or build", p)
	}
	return &CPU{path: p, pool: defaultPool(), parallelMACs: defaultParallelMACs}, nil
}

// Path returns the code path c runs.
func (c *CPU) Path() Path { return c.path }

// Name returns "cpu-" and the path, e.g. "cpu-avx512".
func (c *CPU) Name() string { return "cpu-" + c.path.String() }
