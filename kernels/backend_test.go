package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

func TestEveryPathThisMachineHasIsRegistered(t *testing.T) {
	for _, p := range []Path{PathGo, PathAVX2, PathAVX512} {
		b, err := Open("cpu-" + p.String())
		if p.Supported() != (err == nil) {
			t.Fatalf("Open(cpu-%v): err = %v, but Supported = %v", p, err, p.Supported())
		}
		if err == nil && b.Name() != "cpu-"+p.String() {
			t.Fatalf("Open(cpu-%v) gave %s", p, b.Name())
		}
	}
	b, err := Open("cpu")
	if err != nil || b.Name() != "cpu-"+BestPath().String() {
		t.Fatalf(`Open("cpu") = %v, %v; want the best path %v`, b, err, BestPath())
	}
	if _, err := Open("tpu"); err == nil {
		t.Fatal(`Open("tpu") succeeded`)
	}
	if !slices.Contains(Names(), "cpu-go") {
		t.Fatalf("Names() = %v lacks cpu-go", Names())
	}
	t.Logf("paths run on this machine: %v (default %v)", Paths(), BestPath())
}

func TestRegisterTwiceUnderOneNamePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("second Register(cpu) did not panic")
		}
	}()
	Register("cpu", func() (Backend, error) { return nil, nil })
}

// TestProductsDoNotDependOnTheParallelSplit runs the same products on one
// goroutine and split over the pool into chunks of every size the split
// makes, and wants the same bits.
func TestProductsDoNotDependOnTheParallelSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range backends(t) {
		for _, s := range [][3]int{{1, 513, 33}, {5, 100, 17}, {64, 129, 65}, {67, 33, 256}} {
			m, n, k := s[0], s[1], s[2]
			x, w, wn := randMat(rng, m, k, k), randMat(rng, n, k, k), randMat(rng, k, n, n)
			serial, split := *c, *c
			serial.parallelMACs = math.MaxInt
			split.parallelMACs = 0
			for _, op := range []struct {
				name string
				run  func(c *CPU, dst Mat)
			}{
				{"MatMulT", func(c *CPU, dst Mat) { c.MatMulT(dst, x, w) }},
				{"MatMul", func(c *CPU, dst Mat) { c.MatMul(dst, x, wn) }},
			} {
				a, b := NewMat(make([]float32, m*n), m, n), NewMat(make([]float32, m*n), m, n)
				op.run(&serial, a)
				op.run(&split, b)
				for i := range a.Data {
					if math.Float32bits(a.Data[i]) != math.Float32bits(b.Data[i]) {
						t.Fatalf("%s %s %v: element %d is %v serial, %v split", c.Name(), op.name, s, i, a.Data[i], b.Data[i])
					}
				}
			}
		}
	}
}

// TestConcurrentCallersGetCorrectResults has several goroutines share the
// pool; run it with -race to check the hand-off.
func TestConcurrentCallersGetCorrectResults(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	c := Default()
	x, w := randMat(rng, 64, 128, 128), randMat(rng, 96, 128, 128)
	want := NewMat(make([]float32, 64*96), 64, 96)
	c.MatMulT(want, x, w)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			dst := NewMat(make([]float32, 64*96), 64, 96)
			for range 50 {
				c.MatMulT(dst, x, w)
				if !slices.Equal(dst.Data, want.Data) {
					t.Errorf("goroutine %d got a different product", g)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestHotKernelsDoNotAllocate calls every kernel through the Backend
// interface, as the model does, on every path.
func TestHotKernelsDoNotAllocate(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("instrumented builds allocate")
	}
	rng := rand.New(rand.NewPCG(25, 26))
	const m, h, inter, n = 33, 64, 16, 67
	x, w, wn := randMat(rng, m, h, h), randMat(rng, n, h, h), randMat(rng, h, n, n)
	big, bigW := randMat(rng, 64, 256, 256), randMat(rng, 256, 256, 256)
	bigDst := NewMat(make([]float32, 64*256), 64, 256)
	dst := NewMat(make([]float32, m*n), m, n)
	hdst := NewMat(make([]float32, m*h), m, h)
	gate, up, down := randMat(rng, inter, h, h), randMat(rng, inter, h, h), randMat(rng, h, inter, inter)
	work := make([]float32, 2*m*inter)
	vec, vout := randVec(rng, h), make([]float32, n)
	wts, bias := randVec(rng, h), randVec(rng, h)
	rope := NewRope(h, 128, 1e6)
	pos := make([]int32, m)
	keys, values := randMat(rng, 100, h, h), randMat(rng, 100, 48, 48)
	rows := []int32{5, 1, 99, 42, 7, 7, 63, 0, 12, 13, 14}
	scores, aout := make([]float32, len(rows)), make([]float32, 48)
	tk, tv := make([]int32, 8), make([]float32, 8)
	for _, c := range backends(t) {
		var b Backend = c
		for name, f := range map[string]func(){
			"MatMulT":          func() { b.MatMulT(dst, x, w) },
			"MatMulT parallel": func() { b.MatMulT(bigDst, big, bigW) },
			"MatMul":           func() { b.MatMul(dst, x, wn) },
			"RMSNorm":          func() { b.RMSNorm(hdst, x, wts, 1e-5) },
			"LayerNorm":        func() { b.LayerNorm(hdst, x, wts, bias, 1e-6) },
			"RoPE":             func() { b.RoPE(hdst, pos, rope) },
			"SwiGLU":           func() { b.SwiGLU(hdst, x, gate, up, down, work) },
			"TopK":             func() { b.TopK(tk, tv, vout) },
			"GatherAttention":  func() { b.GatherAttention(aout, vec, keys, values, rows, 0.125, scores) },
			"Add":              func() { b.Add(vout, vout, vout) },
			"AddScaled":        func() { b.AddScaled(vout, 0.5, vout) },
			"Sigmoid":          func() { b.Sigmoid(vout, vout) },
		} {
			if a := testing.AllocsPerRun(20, f); a != 0 {
				t.Errorf("%s %s allocates %v times per call", c.Name(), name, a)
			}
		}
	}
}

func TestMismatchedShapesPanicInsteadOfReadingPastTheData(t *testing.T) {
	c := Default()
	x, w := NewMat(make([]float32, 6), 2, 3), NewMat(make([]float32, 12), 4, 3)
	for name, f := range map[string]func(){
		"dst too narrow": func() { c.MatMulT(NewMat(make([]float32, 6), 2, 3), x, w) },
		"inner dims":     func() { c.MatMulT(NewMat(make([]float32, 8), 2, 4), x, NewMat(make([]float32, 8), 4, 2)) },
		"short data": func() {
			c.MatMulT(NewMat(make([]float32, 8), 2, 4), Mat{Data: make([]float32, 5), Rows: 2, Cols: 3, Stride: 3}, w)
		},
		"stride too small": func() {
			c.MatMul(NewMat(make([]float32, 8), 2, 4), Mat{Data: make([]float32, 6), Rows: 2, Cols: 3, Stride: 2}, NewMat(make([]float32, 12), 3, 4))
		},
		"row out of range": func() {
			c.GatherAttention(make([]float32, 3), make([]float32, 3), w, w, []int32{4}, 1, make([]float32, 1))
		},
		"negative row": func() {
			c.GatherAttention(make([]float32, 3), make([]float32, 3), w, w, []int32{-1}, 1, make([]float32, 1))
		},
		"short scores": func() { c.GatherAttention(make([]float32, 3), make([]float32, 3), w, w, nil, 1, make([]float32, 3)) },
		"position":     func() { c.RoPE(NewMat(make([]float32, 4), 1, 4), []int32{9}, NewRope(4, 9, 1e4)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
