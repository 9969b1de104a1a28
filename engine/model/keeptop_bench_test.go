package model

import (
	"fmt"
	mrand "math/rand/v2"
	"testing"

	"github.com/glmbench/glmbench/kernels"
)

// BenchmarkKeepTop selects the top 64 of a row of indexer-like scores
// (half of them zero, as ReLU leaves them).
func BenchmarkKeepTop(b *testing.B) {
	for _, n := range []int{1024, 8192} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			rng := mrand.New(mrand.NewPCG(1, 2))
			rows := make([][]float32, 64)
			for i := range rows {
				rows[i] = make([]float32, n)
				for j := range rows[i] {
					if v := rng.NormFloat64(); v > 0 {
						rows[i][j] = float32(v)
					}
				}
			}
			slots := make([]int32, n)
			out := make([]int32, 64)
			m := &Model{K: kernels.Default()}
			ws := &workspace{}
			i := 0
			for b.Loop() {
				m.keepTop(ws, rows[i%64], slots, out)
				i++
			}
		})
	}
}
