package cudaexec

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/kernels"
)

// The device benchmarks skip without a GPU (and fail under
// GLMBENCH_REQUIRE_CUDA=1). Run them with a fixed count, e.g.
//
//	go test -run '^$' -bench Device -benchtime 20x ./engine/cudaexec/

// BenchmarkDeviceMatMulT measures the model's own GEMM (Ops.MatMulT, the
// batch-invariant kernel) beside cuBLAS's SGEMM (fp32, no TF32) on the
// same shapes: dst m×n = x m×k · wᵀ, in TFLOP/s (2·m·n·k per product).
func BenchmarkDeviceMatMulT(b *testing.B) {
	for _, s := range []struct{ m, n, k int }{{4096, 4096, 4096}, {64, 4096, 4096}} {
		name := fmt.Sprintf("m%d_n%d_k%d", s.m, s.n, s.k)
		flops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		b.Run("ops/"+name, func(b *testing.B) {
			e := gpuEnv{b, gpuOps(b)}
			rng := rand.New(rand.NewPCG(1, 1))
			x, w := e.up(gpuRandMat(rng, s.m, s.k, 1)), e.up(gpuRandMat(rng, s.n, s.k, 0.02))
			dst := e.ops.Alloc(s.m, s.n)
			defer func() { e.ops.Free(x.Mem); e.ops.Free(w.Mem); e.ops.Free(dst.Mem) }()
			one := kernels.NewMat(make([]float32, 1), 1, 1)
			e.ops.MatMulT(dst, x, w) // warm up
			e.ops.Download(one, dst.Slice(0, 1, 0, 1))
			b.ResetTimer()
			for range b.N {
				e.ops.MatMulT(dst, x, w)
			}
			e.ops.Download(one, dst.Slice(0, 1, 0, 1)) // waits for the products
			b.StopTimer()
			e.ok()
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
		})
		b.Run("cublas/"+name, func(b *testing.B) {
			d := gpuOpen(b)
			blas, err := d.ctx.NewBLAS()
			if err != nil {
				b.Fatal(err)
			}
			defer blas.Close()
			rng := rand.New(rand.NewPCG(1, 1))
			x, w, dst := d.Alloc(s.m*s.k, F32).(*gpuMem), d.Alloc(s.n*s.k, F32).(*gpuMem), d.Alloc(s.m*s.n, F32).(*gpuMem)
			d.UploadF32(x, 0, gpuRandMat(rng, s.m, s.k, 1).Data)
			d.UploadF32(w, 0, gpuRandMat(rng, s.n, s.k, 0.02).Data)
			if err := blas.MatMulT(dst.ptr, x.ptr, w.ptr, s.m, s.n, s.k); err != nil {
				b.Fatal(err)
			}
			if err := d.ctx.Synchronize(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := blas.MatMulT(dst.ptr, x.ptr, w.ptr, s.m, s.n, s.k); err != nil {
					b.Fatal(err)
				}
			}
			if err := d.ctx.Synchronize(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := d.Err(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
		})
	}
}

// gpuWeights keeps each preset's synthetic weights across benchmark runs.
var gpuWeights = map[string]*model.Weights{}

// BenchmarkDeviceDecode measures the executor's decode rate on the device:
// batch B sequences, each with a 32-token prompt, decode one token per
// step (an iteration), in tokens/s. Contexts run from 33 to 32+512 tokens
// and then start over at 33 (rewriting the same KV slots), so the rate is
// that of short contexts whatever -benchtime is.
func BenchmarkDeviceDecode(b *testing.B) {
	const prompt, span, pageSize = 32, 512, 16
	for _, preset := range []string{"nano", "tiny", "gpu"} {
		for _, B := range []int{1, 64, 256} {
			for _, mode := range []string{"graphs", "direct"} {
				b.Run(fmt.Sprintf("%s/batch%d/%s", preset, B, mode), func(b *testing.B) {
					cfg, err := model.Preset(preset)
					if err != nil {
						b.Skipf("preset %s: %v", preset, err)
					}
					gpuOps(b) // skip before making weights when there is no GPU
					w := gpuWeights[preset]
					if w == nil {
						w = model.Synth(cfg, 1)
						gpuWeights[preset] = w
					}
					perSeq := (prompt + span + pageSize - 1) / pageSize
					ex := gpuExecutor(b, cfg, w, B*perSeq, pageSize)
					if mode == "graphs" && !ex.UseGraphs(max(B, DefaultCUDAGraphMaxBS)) {
						b.Fatal("UseGraphs on the GPU's Ops is off")
					}
					rng := rand.New(rand.NewPCG(2, 2))
					seqs := make([]model.Seq, B)
					for j := range seqs {
						pages, ok := ex.Pool().Alloc(perSeq)
						if !ok {
							b.Fatal("KV pool too small")
						}
						toks := make([]int32, prompt)
						for i := range toks {
							toks[i] = int32(rng.IntN(cfg.VocabSize))
						}
						seqs[j] = model.Seq{Tokens: toks, Slots: ex.Pool().SlotsFor(nil, pages, 0, prompt+span), Logits: model.LastRow}
					}
					ex.Forward(seqs) // the prompts
					step := func(i int) {
						for j := range seqs {
							seqs[j].Tokens = []int32{int32((i*7 + j) % cfg.VocabSize)}
							seqs[j].Pos = prompt + i%span
						}
						ex.Forward(seqs) // returns the logits on the host: the step is done
					}
					step(0) // captures the batch's graph (with graphs)
					b.ResetTimer()
					for i := range b.N {
						step(1 + i)
					}
					b.StopTimer()
					b.ReportMetric(float64(B*b.N)/b.Elapsed().Seconds(), "tokens/s")
					if st := ex.GraphStats(); mode == "graphs" && st.Replays < b.N {
						b.Errorf("graph stats %+v over %d steps: the steps did not replay graphs", st, b.N)
					}
				})
			}
		}
	}
}
