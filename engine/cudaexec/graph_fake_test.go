package cudaexec_test

import (
	"fmt"
	"testing"

	"github.com/glmbench/glmbench/engine/cudaexec"
	"github.com/glmbench/glmbench/engine/cudaexec/cudatest"
	"github.com/glmbench/glmbench/engine/cudaexec/fakecuda"
	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/kernels"
)

// fakeCounts reads the fake driver's graph counts.
func fakeCounts(t *testing.T) fakecuda.GraphCounts {
	t.Helper()
	libs, err := fakecuda.Build()
	if err != nil {
		t.Fatal(err)
	}
	c, err := fakecuda.Counts(libs)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGraphBucketsAreSGLangs(t *testing.T) {
	for _, c := range []struct {
		max  int
		want string
	}{
		{1, "[1]"}, {3, "[1 2 3]"}, {8, "[1 2 4 8]"}, {20, "[1 2 4 8 16 20]"},
		{64, "[1 2 4 8 16 32 64]"}, {300, "[1 2 4 8 16 32 64 128 256 300]"},
		// The server args in shared/reference: cuda_graph_bs up to max_bs 1024.
		{1024, "[1 2 4 8 16 32 64 128 256 384 512 640 768 896 1024]"}, {0, "[]"},
	} {
		if got := fmt.Sprint(cudaexec.GraphBuckets(c.max)); got != c.want {
			t.Errorf("GraphBuckets(%d) = %s, want %s", c.max, got, c.want)
		}
	}
}

// The decode graphs' truth on the fake driver: an Executor replaying
// CUDA graphs and one launching directly, on the same weights, give the
// same bits on every decode step of cudatest.DecodeSteps (buckets 1, 2,
// 4 and 8 of a graph max of 8), the graphs were really replayed (the
// Executor's count and the driver's cuGraphLaunch count agree, every
// decode step went through a graph), and Close leaves no stream or graph.
func TestFakeCUDADecodeGraphsGiveTheDirectLaunchesBits(t *testing.T) {
	dir := fakecuda.Use(t)
	cfg, err := model.Preset("nano")
	if err != nil {
		t.Fatal(err)
	}
	cfg.IndexTopK = 8 // the script's positions cross it in a few steps
	w := model.Synth(cfg, 5)
	const pages, pageSize = 8, 16
	open := func(graphs bool) *cudaexec.Executor {
		ops, err := cudaexec.OpenDevice(cudaexec.DeviceOptions{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		ex, err := cudaexec.NewExecutor(cfg, w, ops, pages, pageSize, false)
		if err != nil {
			ops.Close()
			t.Fatal(err)
		}
		if graphs && !ex.UseGraphs(8) {
			t.Fatal("UseGraphs on the fake device's Ops is off: its Ops is not a Grapher")
		}
		return ex
	}
	before := fakeCounts(t)
	with, without := open(true), open(false)
	cudatest.DecodeSteps.Same(t, with, without, with.Pool(), cfg.VocabSize)

	// The script's buckets: 4 captured, replayed; 1 captured; 4 replayed;
	// 8 captured (its scratch is larger: the others' graphs are stale);
	// 2 captured; 4 captured again, replayed.
	if st, want := with.GraphStats(), (cudaexec.GraphStats{Captures: 5, Replays: 3}); st != want {
		t.Errorf("graph stats %+v, want %+v", st, want)
	}
	st := with.GraphStats()
	if z := without.GraphStats(); z != (cudaexec.GraphStats{}) {
		t.Errorf("the executor without graphs counts %+v", z)
	}
	mid := fakeCounts(t)
	if n := mid.Launches - before.Launches; n != uint64(st.Replays) {
		t.Errorf("the driver ran %d graph launches, the executor counts %d replays", n, st.Replays)
	}
	if n := mid.Captures - before.Captures; n != uint64(st.Captures) {
		t.Errorf("the driver ended %d captures, the executor counts %d", n, st.Captures)
	}
	for _, ex := range []*cudaexec.Executor{with, without} {
		if err := ex.Close(); err != nil {
			t.Error(err)
		}
	}
	after := fakeCounts(t)
	if after.Streams != before.Streams || after.Graphs != before.Graphs || after.Execs != before.Execs || after.Leaked != before.Leaked {
		t.Errorf("after Close the driver holds %+v, before the executors %+v", after, before)
	}
}

// Over Ops without graphs (the emulator's, the host's) UseGraphs is off
// and the Executor launches directly.
func TestUseGraphsIsOffOverOpsThatAreNoGrapher(t *testing.T) {
	cfg, err := model.Preset("nano")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := cudaexec.NewExecutor(cfg, model.Synth(cfg, 1), cudaexec.NewHostOps(kernels.Default()), 4, 16, false)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	if ex.UseGraphs(8) {
		t.Error("UseGraphs over host Ops reports graphs on")
	}
}

// Only decode-only batches of at most the graph max replay graphs: a
// batch past the max, and a mixed one (a sequence with two new tokens),
// launch directly; a one-token batch within the max is captured.
func TestFakeCUDAOnlyDecodeBatchesWithinTheMaxUseGraphs(t *testing.T) {
	dir := fakecuda.Use(t)
	cfg, err := model.Preset("nano")
	if err != nil {
		t.Fatal(err)
	}
	ops, err := cudaexec.OpenDevice(cudaexec.DeviceOptions{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := cudaexec.NewExecutor(cfg, model.Synth(cfg, 2), ops, 8, 16, false)
	if err != nil {
		ops.Close()
		t.Fatal(err)
	}
	defer ex.Close()
	if !ex.UseGraphs(2) {
		t.Fatal("UseGraphs is off on the fake device")
	}
	pool := ex.Pool()
	seq := func(toks ...int32) model.Seq {
		pages, ok := pool.Alloc(1)
		if !ok {
			t.Fatal("KV pool too small")
		}
		return model.Seq{Tokens: toks, Slots: pool.SlotsFor(nil, pages, 0, 16), Logits: model.LastRow}
	}
	for _, c := range []struct {
		what string
		seqs []model.Seq
		want cudaexec.GraphStats
	}{
		{"3 one-token sequences, past the max of 2", []model.Seq{seq(1), seq(2), seq(3)}, cudaexec.GraphStats{}},
		{"a mixed batch", []model.Seq{seq(4, 5)}, cudaexec.GraphStats{}},
		{"2 one-token sequences", []model.Seq{seq(6), seq(7)}, cudaexec.GraphStats{Captures: 1}},
	} {
		out := ex.Forward(c.seqs)
		if out.Logits.Rows != len(c.seqs) {
			t.Errorf("%s: %d rows of logits, want %d", c.what, out.Logits.Rows, len(c.seqs))
		}
		if st := ex.GraphStats(); st != c.want {
			t.Errorf("after %s: graph stats %+v, want %+v", c.what, st, c.want)
		}
	}
}
