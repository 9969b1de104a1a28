package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// oddSizes are the sizes every product is checked on: 1, around the SIMD
// widths (4, 8, 16) and tile sizes, and a few larger odd ones.
var oddSizes = []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 65, 129}

// backends returns one CPU backend per path this machine can run. A path
// the machine lacks is skipped with a log line, so the test output shows
// which paths were exercised.
func backends(t testing.TB) []*CPU {
	var cs []*CPU
	for _, p := range []Path{PathGo, PathAVX2, PathAVX512} {
		c, err := NewCPU(p)
		if err != nil {
			t.Logf("path %v not run: %v", p, err)
			continue
		}
		cs = append(cs, c)
	}
	return cs
}

// tol is the float32 rounding bound for a sum of k products whose absolute
// values sum to abs.
func tol(k int, abs float64) float64 {
	return float64(k+2)*abs*float64(math.Nextafter32(1, 2)-1) + 1e-30
}

// checkNearRef fails t at the first element of the m×n product dst that is
// further from the reference want than the rounding bound for k products
// whose absolute values sum to abs.
func checkNearRef(t *testing.T, c *CPU, dst Mat, want, abs [][]float64, k int) {
	t.Helper()
	m, n := dst.Rows, dst.Cols
	for i := range m {
		for j := range n {
			got := float64(dst.Data[i*dst.Stride+j])
			if d := math.Abs(got - want[i][j]); !(d <= tol(k, abs[i][j])) {
				t.Fatalf("%s m=%d n=%d k=%d: dst[%d][%d] = %v, want %v", c.Name(), m, n, k, i, j, got, want[i][j])
			}
		}
	}
}

func TestMatMulTMatchesReferenceOnOddSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range backends(t) {
		for _, m := range []int{1, 3, 4, 5, 9} {
			for _, n := range oddSizes {
				for _, k := range oddSizes {
					x := randMat(rng, m, k, k+3)
					w := randMat(rng, n, k, k+1)
					dst := randMat(rng, m, n, n+2)
					c.MatMulT(dst, x, w)
					want, abs := refMatMulT(x, w), refAbsMatMulT(x, w)
					checkNearRef(t, c, dst, want, abs, k)
				}
			}
		}
	}
}

func TestMatMulTRowIsBitIdenticalAloneAndInBatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range backends(t) {
		for _, shape := range [][2]int{{1, 1}, {7, 5}, {17, 33}, {65, 129}, {64, 256}, {320, 64}} {
			n, k := shape[0], shape[1]
			w := randMat(rng, n, k, k)
			const rows = 37
			x := randMat(rng, rows, k, k)
			alone := make([][]float32, rows)
			for i := range rows {
				alone[i] = make([]float32, n)
				c.MatMulT(NewMat(alone[i], 1, n), x.Slice(i, i+1, 0, k), w)
			}
			for _, m := range []int{1, 2, 3, 4, 5, 8, 13, 37} {
				for _, start := range []int{0, (rows - m) / 2, rows - m} {
					xs := x.Slice(start, start+m, 0, k)
					dst := NewMat(make([]float32, m*n), m, n)
					c.MatMulT(dst, xs, w)
					for i := range m {
						for j := range n {
							if a, b := math.Float32bits(dst.Data[i*n+j]), math.Float32bits(alone[start+i][j]); a != b {
								t.Fatalf("%s n=%d k=%d: row %d in a batch of %d from %d differs at column %d: %v vs %v alone",
									c.Name(), n, k, start+i, m, start, j, dst.Data[i*n+j], alone[start+i][j])
							}
						}
					}
				}
			}
		}
	}
}

func TestMatMulMatchesReferenceOnOddSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range backends(t) {
		for _, m := range []int{1, 3, 5} {
			for _, n := range append(oddSizes, 63, 64, 127, 130) {
				for _, k := range oddSizes {
					x := randMat(rng, m, k, k+3)
					w := randMat(rng, k, n, n+1)
					dst := randMat(rng, m, n, n+2)
					c.MatMul(dst, x, w)
					want, abs := refMatMul(x, w), refAbsMatMul(x, w)
					checkNearRef(t, c, dst, want, abs, k)
				}
			}
		}
	}
}

var _ = fmt.Sprint
