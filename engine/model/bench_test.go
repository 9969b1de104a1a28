package model

import (
	"fmt"
	"testing"
)

// BenchmarkPrefill runs one sequence's prefill of n tokens and reports tokens/s.
func BenchmarkPrefill(b *testing.B) {
	for _, preset := range []string{"nano", "tiny"} {
		for _, n := range []int{512, 2048, 8192} {
			b.Run(fmt.Sprintf("%s/%d", preset, n), func(b *testing.B) {
				cfg, _ := Preset(preset)
				m := newTestModel(b, cfg, 1, n/4+1)
				var pages []int32
				s := seqOf(b, m, &pages, n, tokensN(n, 1), 0, LastRow)
				for b.Loop() {
					m.Forward([]Seq{s})
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}

// BenchmarkDecode runs decode steps of a batch of sequences, each with ctx
// tokens of context, and reports generated tokens/s and ms per step.
func BenchmarkDecode(b *testing.B) {
	for _, preset := range []string{"nano", "tiny"} {
		for _, batch := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/batch%d", preset, batch), func(b *testing.B) {
				cfg, _ := Preset(preset)
				const ctx = 256
				m := newTestModel(b, cfg, 1, batch*(ctx/4+2))
				seqs := make([]Seq, batch)
				for i := range seqs {
					var pages []int32
					m.Forward([]Seq{seqOf(b, m, &pages, ctx, tokensN(ctx, i), 0, NoRows)})
					seqs[i] = seqOf(b, m, &pages, ctx+1, []int32{7}, ctx, LastRow)
				}
				for b.Loop() {
					m.Forward(seqs)
				}
				b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "tok/s")
				b.ReportMetric(b.Elapsed().Seconds()*1e3/float64(b.N), "ms/step")
			})
		}
	}
}
