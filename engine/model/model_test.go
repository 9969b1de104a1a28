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
	logits, _ := prefillWhole(t, m, tokensN(20, 1))
	if logits.Rows != 20 || logits.Cols != cfg.VocabSize {
		t.Fatalf("logits %d×%d", logits.Rows, logits.Cols)
	}
	spread := 0.0
	for _, v := range logits.Data[:20*cfg.VocabSize] {
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

// prefillWhole prefills toks from position 0 in pages of their own and
// returns a copy of every row's logits, and the pages.
func prefillWhole(t testing.TB, m *Model, toks []int32) (kernels.Mat, []int32) {
	t.Helper()
	var pages []int32
	out := m.Forward([]Seq{seqOf(t, m, &pages, len(toks), toks, 0, AllRows)})
	return cloneMat(out.Logits), pages
}

func cloneMat(m kernels.Mat) kernels.Mat {
	out := kernels.NewMat(make([]float32, m.Rows*m.Cols), m.Rows, m.Cols)
	for i := range m.Rows {
		copy(out.Row(i), m.Row(i))
	}
	return out
}

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

// microConfig is nano with a small index_topk, so that DSA prunes at the
// lengths tests use.
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
		alone[i], pages = prefillWhole(t, m, tokensN(n, i))
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

// TestPiecewiseForwardEqualsPrefillOfTheWholeSequence feeds a sequence to
// the model in forward passes over consecutive pieces, each on the KV of
// the ones before, and checks the logits each gives against the same rows
// of one prefill of the whole.
func TestPiecewiseForwardEqualsPrefillOfTheWholeSequence(t *testing.T) {
	t.Parallel()
	// piece is one forward pass: positions [from, to), giving rows.
	type piece struct {
		from, to int
		rows     Rows
	}
	decode := []piece{{0, 20, NoRows}}
	for p := 20; p < 30; p++ {
		decode = append(decode, piece{p, p + 1, LastRow})
	}
	for _, tc := range []struct {
		name    string
		seed    uint64
		n, salt int
		pieces  []piece
	}{
		{"chunked prefill", 3, 45, 2, []piece{{0, 16, AllRows}, {16, 17, AllRows}, {17, 40, AllRows}, {40, 45, AllRows}}},
		{"decode after prefill", 5, 30, 3, decode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newTestModel(t, microConfig(), tc.seed, 128)
			toks := tokensN(tc.n, tc.salt)
			want, _ := prefillWhole(t, m, toks)
			var pages []int32
			for _, p := range tc.pieces {
				out := m.Forward([]Seq{seqOf(t, m, &pages, p.to, toks[p.from:p.to], p.from, p.rows)})
				switch p.rows {
				case AllRows:
					sameLogits(t, tc.name, out.Logits, want.Slice(p.from, p.to, 0, want.Cols))
				case LastRow:
					sameLogits(t, tc.name, out.Logits, want.Slice(p.to-1, p.to, 0, want.Cols))
				}
			}
		})
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
