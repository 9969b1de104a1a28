package model

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/kernels"
)

// newTestModel builds a synthetic nano-shaped model with its own cache.
func newTestModel(t testing.TB, cfg *Config, seed uint64, pages int) *Model {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return New(cfg, Synth(cfg, seed), kernels.Default(), NewKVCache(cfg, pages, 4))
}

// seqOf allocates pages for n positions and returns a sequence for tokens at pos.
func seqOf(t testing.TB, m *Model, pages *[]int32, n int, tokens []int32, pos int, rows Rows) Seq {
	t.Helper()
	need := (n + m.KV.PageSize - 1) / m.KV.PageSize
	if len(*pages) < need {
		more, ok := m.KV.Alloc(need - len(*pages))
		if !ok {
			t.Fatal("KV cache full")
		}
		*pages = append(*pages, more...)
	}
	return Seq{Tokens: tokens, Pos: pos, Slots: m.KV.SlotsFor(nil, *pages, 0, n), Logits: rows}
}

func tokensN(n int, salt int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32((i*37 + salt*11 + 5) % 256)
	}
	return out
}

func TestForwardGivesFiniteLogits(t *testing.T) {
	t.Parallel()
	cfg, _ := Preset("nano")
	m := newTestModel(t, cfg, 1, 64)
	var pages []int32
	toks := tokensN(20, 1)
	out := m.Forward([]Seq{seqOf(t, m, &pages, 20, toks, 0, AllRows)})
	if out.Logits.Rows != 20 || out.Logits.Cols != cfg.VocabSize {
		t.Fatalf("logits %d×%d", out.Logits.Rows, out.Logits.Cols)
	}
	spread := 0.0
	for _, v := range out.Logits.Data[:20*cfg.VocabSize] {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatal("non-finite logit")
		}
		spread = math.Max(spread, math.Abs(float64(v)))
	}
	if spread < 0.5 {
		t.Fatalf("logits all near zero (max |logit| %.3f): the synthetic model says nothing", spread)
	}
}

// sameLogits checks that every row of got equals want within 1e-4 of the
// row's largest |logit|.
func sameLogits(t *testing.T, what string, got, want kernels.Mat) {
	t.Helper()
	if got.Rows != want.Rows || got.Cols != want.Cols {
		t.Fatalf("%s: %d×%d vs %d×%d", what, got.Rows, got.Cols, want.Rows, want.Cols)
	}
	for i := range got.Rows {
		g, w := got.Row(i), want.Row(i)
		big := 0.0
		for _, v := range w {
			big = math.Max(big, math.Abs(float64(v)))
		}
		for j := range g {
			if d := math.Abs(float64(g[j] - w[j])); d > 1e-4*big {
				t.Fatalf("%s: row %d logit %d: %v vs %v (tolerance %.2g)", what, i, j, g[j], w[j], 1e-4*big)
			}
		}
	}
}

func cloneMat(m kernels.Mat) kernels.Mat {
	out := kernels.NewMat(make([]float32, m.Rows*m.Cols), m.Rows, m.Cols)
	for i := range m.Rows {
		copy(out.Row(i), m.Row(i))
	}
	return out
}

// microConfig is nano with a small index_topk, so that DSA prunes at the
// lengths tests use.
func TestForwardAndMTPForwardRefuseASequenceShortOfSlots(t *testing.T) {
	t.Parallel()
	cfg, _ := Preset("nano")
	m := newTestModel(t, cfg, 1, 8)
	var pages []int32
	s := seqOf(t, m, &pages, 6, tokensN(6, 1), 0, LastRow)
	s.Slots = s.Slots[:5] // one slot short of the last new token
	prev := kernels.NewMat(make([]float32, 6*cfg.HiddenSize), 6, cfg.HiddenSize)
	for _, tc := range []struct {
		name string
		run  func()
	}{
		{"Forward", func() { m.Forward([]Seq{s}) }},
		{"MTPForward", func() { m.MTPForward([]Seq{s}, prev) }},
	} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, "has 5 slots") {
					t.Errorf("%s: panic %q, want the slot check's", tc.name, msg)
				}
			}()
			tc.run()
		}()
	}
}

func microConfig() *Config {
	cfg, _ := Preset("nano")
	cfg.IndexTopK = 8
	return cfg
}

func TestBatchedEqualsOneSequenceAtATime(t *testing.T) {
	t.Parallel()
	cfg := microConfig()
	lens := []int{5, 23, 1, 40}
	alone := make([]kernels.Mat, len(lens))
	m := newTestModel(t, cfg, 7, 256)
	for i, n := range lens {
		var pages []int32
		alone[i] = cloneMat(m.Forward([]Seq{seqOf(t, m, &pages, n, tokensN(n, i), 0, AllRows)}).Logits)
		m.KV.Release(pages)
	}
	var batch []Seq
	for i, n := range lens {
		var pages []int32
		batch = append(batch, seqOf(t, m, &pages, n, tokensN(n, i), 0, AllRows))
	}
	out := m.Forward(batch)
	for i := range lens {
		got, _ := out.SeqRows(i)
		sameLogits(t, "batched", got, alone[i])
	}
}

func TestChunkedPrefillEqualsWholePrefill(t *testing.T) {
	t.Parallel()
	cfg := microConfig()
	m := newTestModel(t, cfg, 3, 128)
	toks := tokensN(45, 2)
	var whole []int32
	want := cloneMat(m.Forward([]Seq{seqOf(t, m, &whole, 45, toks, 0, AllRows)}).Logits)

	var pages []int32
	var rows []kernels.Mat
	for _, ch := range [][2]int{{0, 16}, {16, 17}, {17, 40}, {40, 45}} {
		out := m.Forward([]Seq{seqOf(t, m, &pages, ch[1], toks[ch[0]:ch[1]], ch[0], AllRows)})
		rows = append(rows, cloneMat(out.Logits))
	}
	got := kernels.NewMat(make([]float32, 45*cfg.VocabSize), 45, cfg.VocabSize)
	r := 0
	for _, m := range rows {
		for i := range m.Rows {
			copy(got.Row(r), m.Row(i))
			r++
		}
	}
	sameLogits(t, "chunked", got, want)
}

func TestDecodeAfterPrefillEqualsPrefillOfTheWholeSequence(t *testing.T) {
	t.Parallel()
	cfg := microConfig()
	m := newTestModel(t, cfg, 5, 128)
	toks := tokensN(30, 3)
	var whole []int32
	want := cloneMat(m.Forward([]Seq{seqOf(t, m, &whole, 30, toks, 0, AllRows)}).Logits)

	var pages []int32
	m.Forward([]Seq{seqOf(t, m, &pages, 20, toks[:20], 0, NoRows)})
	for p := 20; p < 30; p++ {
		out := m.Forward([]Seq{seqOf(t, m, &pages, p+1, toks[p:p+1], p, LastRow)})
		sameLogits(t, "decode", out.Logits, want.Slice(p, p+1, 0, want.Cols))
	}
}

func TestAbsorbedMLAEqualsNaiveMLA(t *testing.T) {
	t.Parallel()
	for _, topk := range []int{8, 64} { // sparse and dense
		cfg := microConfig()
		cfg.IndexTopK = topk
		m := newTestModel(t, cfg, 11, 64)
		toks := tokensN(33, 4)
		var pages []int32
		absorbed := cloneMat(m.Forward([]Seq{seqOf(t, m, &pages, 33, toks, 0, AllRows)}).Logits)
		m.Naive = true
		naive := m.Forward([]Seq{seqOf(t, m, &pages, 33, toks, 0, AllRows)}).Logits
		sameLogits(t, "naive vs absorbed", naive, absorbed)
	}
}

func TestKeepTopAgreesWithKernelsTopK(t *testing.T) {
	t.Parallel()
	m := &Model{K: kernels.Default()}
	ws := &workspace{}
	for trial := range 300 {
		n := 1 + trial*37%3000
		k := 1 + trial%70
		if k > n {
			k = n
		}
		score := make([]float32, n)
		for i := range score {
			// Few distinct values, so ties at the boundary are common.
			score[i] = float32((i*7919 + trial*104729) % (5 + trial%40))
		}
		slots := make([]int32, n)
		for i := range slots {
			slots[i] = int32(1000 + i)
		}
		got := make([]int32, k)
		m.keepTop(ws, score, slots, got)
		want := make([]int32, k)
		m.K.TopK(want, nil, score)
		slices.Sort(want)
		for i := range want {
			want[i] = slots[want[i]]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("n=%d k=%d: keepTop %v, TopK %v", n, k, got, want)
		}
	}
}

func TestScatteredSlotsGiveTheSameLogitsAsContiguousOnes(t *testing.T) {
	t.Parallel()
	cfg := microConfig()
	m := newTestModel(t, cfg, 13, 64)
	toks := tokensN(60, 6)
	contiguous, _ := m.KV.Alloc(15)
	want := cloneMat(m.Forward([]Seq{{Tokens: toks, Slots: m.KV.SlotsFor(nil, contiguous, 0, 60), Logits: AllRows}}).Logits)
	// The same sequence on pages taken out of order: every slot run is one page.
	scattered, _ := m.KV.Alloc(15)
	for i, j := 0, len(scattered)-1; i < j; i, j = i+2, j-2 {
		scattered[i], scattered[j] = scattered[j], scattered[i]
	}
	got := m.Forward([]Seq{{Tokens: toks, Slots: m.KV.SlotsFor(nil, scattered, 0, 60), Logits: AllRows}}).Logits
	for i := range got.Rows {
		for j, v := range got.Row(i) {
			if math.Float32bits(v) != math.Float32bits(want.Row(i)[j]) {
				t.Fatalf("row %d logit %d: %v scattered, %v contiguous", i, j, v, want.Row(i)[j])
			}
		}
	}
}
