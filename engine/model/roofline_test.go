package model

import (
	"fmt"
	"testing"
	"time"

	"github.com/glmbench/glmbench/kernels"
)

// cost is the work of one token through the main model: floating-point
// operations (2 per multiply-add) and bytes of weights and KV cache read.
type cost struct{ flops, bytes float64 }

// tokenCost counts one token's work at context length ctx, weights read once
// per token (batch 1: every token pays for them).
func tokenCost(cfg *Config, ctx int) cost {
	H := float64(cfg.HiddenSize)
	heads, dn, dr, dv, r := float64(cfg.NumAttentionHeads), float64(cfg.QKNopeHeadDim), float64(cfg.QKRopeHeadDim), float64(cfg.VHeadDim), float64(cfg.KVLoraRank)
	ql, hi, di := float64(cfg.QLoraRank), float64(cfg.IndexNHeads), float64(cfg.IndexHeadDim)
	keys := float64(min(ctx, cfg.IndexTopK))
	var macs, params float64
	attnParams := ql*H + heads*(dn+dr)*ql + (r+dr)*H + heads*(dn+dv)*r + H*heads*dv + hi*di*ql + di*H + hi*H
	for l := range cfg.NumHiddenLayers {
		macs += attnParams
		macs += heads * (dn*r + keys*(r+dr) + keys*r + dv*r) // absorbed attention over the selected keys
		macs += float64(ctx) * hi * di                       // the indexer scores every visible key
		params += attnParams
		if cfg.IsMoE(l) {
			expert := 3 * H * float64(cfg.MoEIntermediateSize)
			active := float64(cfg.NumExpertsPerTok+max(cfg.NSharedExperts, 1))*expert + float64(cfg.NRoutedExperts)*H
			macs += active
			params += active
		} else {
			macs += 3 * H * float64(cfg.IntermediateSize)
			params += 3 * H * float64(cfg.IntermediateSize)
		}
	}
	macs += float64(cfg.VocabSize) * H // lm_head
	params += float64(cfg.VocabSize)*H + H
	kvBytes := float64(ctx) * float64(cfg.KVWidth()) * float64(cfg.NumHiddenLayers) * 4
	return cost{flops: 2 * macs, bytes: 4*params + kvBytes}
}

// machinePeaks measures, in this run, a practical FLOP peak (the best of a
// large product on the kernels) and the memory bandwidth (a large copy).
func machinePeaks() (flops, bw float64) {
	k := kernels.Default()
	n := 512
	x := kernels.NewMat(make([]float32, n*n), n, n)
	w := kernels.NewMat(make([]float32, n*n), n, n)
	d := kernels.NewMat(make([]float32, n*n), n, n)
	best := 0.0
	for range 5 {
		t := time.Now()
		k.MatMulT(d, x, w)
		best = max(best, 2*float64(n*n*n)/time.Since(t).Seconds())
	}
	src := make([]byte, 256<<20)
	dst := make([]byte, 256<<20)
	copy(dst, src) // touch the pages
	bestBW := 0.0
	for range 3 {
		t := time.Now()
		copy(dst, src)
		bestBW = max(bestBW, 2*float64(len(src))/time.Since(t).Seconds()) // read + write
	}
	return best, bestBW
}

// BenchmarkRoofline measures prefill and decode for nano and tiny at batch 1
// and 64 and sets them beside the FLOP and bandwidth rooflines of this
// machine, measured in the same run. Run with -v to see the table.
func BenchmarkRoofline(b *testing.B) {
	peakF, peakB := machinePeaks()
	b.Logf("machine: %.1f GFLOP/s (a 512³ product on %s), %.1f GB/s (256 MiB copy)", peakF/1e9, kernels.Default().Name(), peakB/1e9)
	b.Logf("%-6s %-8s %6s %5s %12s %14s %14s", "preset", "phase", "batch", "ctx", "tokens/s", "FLOP roof", "bandwidth roof")
	for _, preset := range []string{"nano", "tiny"} {
		cfg, _ := Preset(preset)
		for _, batch := range []int{1, 64} {
			const ctx = 512
			m := newTestModel(b, cfg, 1, batch*(ctx/4+2))
			seqs := make([]Seq, batch)
			all := make([][]int32, batch)
			for i := range seqs {
				var pages []int32
				seqs[i] = seqOf(b, m, &pages, ctx, tokensN(ctx, i), 0, LastRow)
				all[i] = pages
			}
			t := time.Now()
			m.Forward(seqs)
			prefill := float64(batch*ctx) / time.Since(t).Seconds()
			for i := range seqs {
				seqs[i] = seqOf(b, m, &all[i], ctx+1, []int32{7}, ctx, LastRow)
			}
			const steps = 20
			t = time.Now()
			for range steps {
				m.Forward(seqs)
			}
			decode := float64(batch*steps) / time.Since(t).Seconds()
			c := tokenCost(cfg, ctx)
			// Prefill and batched decode share the weights' bytes over the batch.
			pre := cost{flops: c.flops, bytes: c.bytes / float64(batch*ctx)}
			dec := cost{flops: c.flops, bytes: (c.bytes-float64(ctx*cfg.KVWidth()*cfg.NumHiddenLayers*4))/float64(batch) + float64(ctx*cfg.KVWidth()*cfg.NumHiddenLayers*4)}
			b.Logf("%-6s %-8s %6d %5d %12.0f %14.0f %14.0f", preset, "prefill", batch, ctx, prefill, peakF/pre.flops, peakB/pre.bytes)
			b.Logf("%-6s %-8s %6d %5d %12.0f %14.0f %14.0f", preset, "decode", batch, ctx, decode, peakF/dec.flops, peakB/dec.bytes)
			b.ReportMetric(decode, fmt.Sprintf("%s-b%d-decode-tok/s", preset, batch))
		}
	}
	for b.Loop() {
	}
}
