package cudaexec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/glmbench/glmbench/engine/cudaexec/cudatest"
	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/engine/sched"
	"github.com/glmbench/glmbench/kernels"
)

var (
	_ sched.Executor     = (*Executor)(nil)
	_ sched.SpecExecutor = (*Executor)(nil)
)

// pair is the CPU model and an Executor over the host Ops on the same
// weights, each with its own KV pool of the same size.
type pair struct {
	cfg *model.Config
	m   *model.Model
	e   *Executor
}

func nano(t testing.TB) *model.Config {
	t.Helper()
	cfg, err := model.Preset("nano")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func newPair(t testing.TB, cfg *model.Config, pages, pageSize int, mtp bool) *pair {
	t.Helper()
	return newPairOn(t, kernels.Default(), cfg, pages, pageSize, mtp)
}

// newPairOn is newPair with both on the kernels k.
func newPairOn(t testing.TB, k kernels.Backend, cfg *model.Config, pages, pageSize int, mtp bool) *pair {
	t.Helper()
	w := model.Synth(cfg, 3)
	m := model.New(cfg, w, k, model.NewKVCache(cfg, pages, pageSize))
	e, err := NewExecutor(cfg, w, NewHostOps(k), pages, pageSize, mtp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return &pair{cfg: cfg, m: m, e: e}
}

// forward runs seqs through both and checks that the Executor's output is
// the model's, bit for bit.
func (p *pair) forward(t *testing.T, what string, seqs []model.Seq) {
	t.Helper()
	want := p.m.Forward(seqs)
	got := p.e.Forward(seqs)
	cudatest.SameOutput(t, what, got, want)
}

// sameKV checks every KV layer the Executor holds against the model's
// cache: the MLA rows and the indexer keys of every slot, bit for bit.
func (p *pair) sameKV(t *testing.T, what string) {
	t.Helper()
	for l, kv := range p.e.kv {
		mla := kernels.NewMat(make([]float32, kv.MLA.Rows*kv.MLA.Cols), kv.MLA.Rows, kv.MLA.Cols)
		p.e.ops.Download(mla, kv.MLA)
		cudatest.SameBits(t, fmt.Sprintf("%s: KV layer %d MLA", what, l), mla, p.m.KV.Layer(l))
		idx := kernels.NewMat(make([]float32, kv.Index.Rows*kv.Index.Cols), kv.Index.Rows, kv.Index.Cols)
		p.e.ops.Download(idx, kv.Index)
		cudatest.SameBits(t, fmt.Sprintf("%s: KV layer %d indexer keys", what, l), idx, p.m.KV.IndexKeys(l))
	}
}

// sameSelection checks that the last layer's selection gave each row of
// seqs min(p+1, index_topk) keys: every visible one, or the top-k.
func (p *pair) sameSelection(t *testing.T, what string, seqs []model.Seq) {
	t.Helper()
	var want []int32
	for _, s := range seqs {
		for i := range s.Tokens {
			want = append(want, int32(min(s.Pos+i+1, p.cfg.IndexTopK)))
		}
	}
	got := make([]int32, len(want))
	p.e.ops.DownloadInts(got, p.e.i32["topk_count"].Slice(0, len(want)))
	if !slices.Equal(got, want) {
		t.Fatalf("%s: selected %v keys per row, want %v", what, got, want)
	}
}

// tok is sequence j's token at position p.
func tok(j, p int) int32 { return int32((p*37 + j*11 + 5) % 320) }

// slotsOn is the slots of positions [0, n) on pages, pageSize slots each.
func slotsOn(pages []int32, pageSize, n int) []int32 {
	kv := &model.KVCache{PageSize: pageSize}
	return kv.SlotsFor(nil, pages, 0, n)
}

// seqSpan is sequence seq's positions [from, to) in a batch.
type seqSpan struct {
	seq, from, to int
	rows          model.Rows
}

func pagesFrom(first, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(first + i)
	}
	return out
}

// TestExecutorOverHostOpsIsForwardBitForBit runs batch scripts through the
// CPU model and the Executor over the host Ops on the same weights, on the
// fastest kernel path and the plain Go one: every batch's logits and
// hidden rows, and in the end every KV slot, must have the same bits.
// nano's index_topk is 64, so the rows past position 63 read the indexer's
// top 64 (checked: each row's count of selected keys is min(p+1, 64));
// contiguous pages score keys one product per run of slots, scattered ones
// gather the keys first.
func TestExecutorOverHostOpsIsForwardBitForBit(t *testing.T) {
	t.Parallel()
	const pageSize = 4
	odd := make([]int32, 40) // pages 1, 3, 5, …: no two adjacent
	even := make([]int32, 40)
	for i := range odd {
		odd[i], even[i] = int32(2*i+1), int32(78-2*i) // even runs backwards
	}
	cases := []struct {
		name    string
		pages   [][]int32 // per sequence
		batches [][]seqSpan
	}{
		{
			name:  "several prompts longer than index_topk in one prefill, then decode steps",
			pages: [][]int32{pagesFrom(0, 25), pagesFrom(25, 30), pagesFrom(55, 20)},
			batches: [][]seqSpan{
				{{0, 0, 70, model.AllRows}, {1, 0, 97, model.LastRow}, {2, 0, 66, model.NoRows}},
				{{0, 70, 71, model.LastRow}, {1, 97, 98, model.LastRow}, {2, 66, 67, model.LastRow}},
				{{0, 71, 72, model.LastRow}, {1, 98, 99, model.LastRow}, {2, 67, 68, model.LastRow}},
				{{1, 99, 100, model.LastRow}},
			},
		},
		{
			name:  "chunked prefill at positions past 0 mixed with decode rows",
			pages: [][]int32{pagesFrom(0, 30), pagesFrom(30, 40)},
			batches: [][]seqSpan{
				{{0, 0, 80, model.LastRow}},
				{{1, 0, 50, model.NoRows}, {0, 80, 81, model.LastRow}},
				{{1, 50, 100, model.NoRows}, {0, 81, 82, model.LastRow}},
				{{0, 82, 85, model.AllRows}, {1, 100, 130, model.LastRow}},
				{{0, 85, 86, model.LastRow}, {1, 130, 131, model.AllRows}},
			},
		},
		{
			name:  "scattered pages: keys gathered before scoring",
			pages: [][]int32{odd, even},
			batches: [][]seqSpan{
				{{0, 0, 90, model.LastRow}, {1, 0, 40, model.NoRows}},
				{{1, 40, 75, model.AllRows}, {0, 90, 91, model.LastRow}},
				{{0, 91, 92, model.LastRow}, {1, 75, 76, model.LastRow}},
			},
		},
		{
			name:  "two long runs of pages: one product per run",
			pages: [][]int32{append(pagesFrom(0, 10), pagesFrom(40, 20)...)},
			batches: [][]seqSpan{
				{{0, 0, 70, model.NoRows}},
				{{0, 70, 100, model.AllRows}},
				{{0, 100, 101, model.LastRow}},
			},
		},
	}
	goPath, err := kernels.Open("cpu-go")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []kernels.Backend{kernels.Default(), goPath} {
		for _, c := range cases {
			t.Run(k.Name()+": "+c.name, func(t *testing.T) {
				t.Parallel()
				runScript(t, newPairOn(t, k, nano(t), 80, pageSize, false), c.pages, c.batches)
			})
		}
	}
}

// runScript runs batches of spans of sequences on pages through p, checking
// each batch's output, the keys each row selected, and the KV pool at the end.
func runScript(t *testing.T, p *pair, pages [][]int32, batches [][]seqSpan) {
	t.Helper()
	pageSize := p.e.Pool().PageSize
	slots := make([][]int32, len(pages))
	for j, pg := range pages {
		slots[j] = slotsOn(pg, pageSize, len(pg)*pageSize)
	}
	for i, b := range batches {
		var seqs []model.Seq
		for _, s := range b {
			var toks []int32
			for q := s.from; q < s.to; q++ {
				toks = append(toks, tok(s.seq, q))
			}
			seqs = append(seqs, model.Seq{Tokens: toks, Pos: s.from, Slots: slots[s.seq][:s.to], Logits: s.rows})
		}
		p.forward(t, fmt.Sprintf("batch %d", i), seqs)
		p.sameSelection(t, fmt.Sprintf("batch %d", i), seqs)
	}
	p.sameKV(t, "after the script")
}

// TestExecutorDraftsTheModelsTokens checks the MTP path: for prompts of
// several lengths (one past index_topk), the MTP layer's forward pass over
// the main model's hidden states gives model.MTPForward's logits and hidden
// rows bit for bit, Draft proposes model.Draft's tokens (the draft cache
// filled in the same call, or in a call of its own with K 0 first), and
// the MTP KV layer holds the model's values.
func TestExecutorDraftsTheModelsTokens(t *testing.T) {
	t.Parallel()
	const k = 4
	for _, split := range []bool{false, true} {
		t.Run(fmt.Sprintf("fill apart %v", split), func(t *testing.T) {
			t.Parallel()
			cfg := nano(t)
			H := cfg.HiddenSize
			p := newPair(t, cfg, 80, 4, true)
			lens := []int{1, 9, 70}
			var seqs, fill []model.DraftSeq
			var mtpIn []model.Seq
			var prevs [][]float32
			for i, n := range lens {
				slots := slotsOn(pagesFrom(25*i, 25), 4, 100)
				prompt := make([]int32, n)
				for q := range prompt {
					prompt[q] = tok(i, q)
				}
				seq := model.Seq{Tokens: prompt, Slots: slots[:n], Logits: model.AllRows}
				want := p.m.Forward([]model.Seq{seq})
				cudatest.SameOutput(t, fmt.Sprintf("prompt %d", i), p.e.Forward([]model.Seq{seq}), want)
				next := int32((n * 7) % cfg.VocabSize)
				all := append(slices.Clone(prompt), next)
				// hid row r is the main model's hidden state before position r.
				hid := kernels.NewMat(make([]float32, (n+1)*H), n+1, H)
				for r := 1; r <= n; r++ {
					copy(hid.Row(r), want.Hidden.Row(r-1))
				}
				mtpIn = append(mtpIn, model.Seq{Tokens: prompt, Slots: slots[:n], Logits: model.AllRows})
				prevs = append(prevs, hid.Data[:n*H])
				if !split {
					seqs = append(seqs, model.DraftSeq{Seq: model.Seq{Tokens: all, Slots: slots}, Hidden: hid, K: k, All: all})
					continue
				}
				fill = append(fill, model.DraftSeq{Seq: model.Seq{Tokens: prompt, Slots: slots}, Hidden: hid.Slice(0, n, 0, H), All: prompt})
				seqs = append(seqs, model.DraftSeq{Seq: model.Seq{Tokens: all[n:], Pos: n, Slots: slots},
					Hidden: kernels.NewMat(slices.Clone(hid.Row(n)), 1, H), K: k, All: all})
			}
			flat := slices.Concat(prevs...)
			prev := kernels.NewMat(flat, len(flat)/H, H)
			cudatest.SameOutput(t, "the MTP layer's forward pass", p.e.mtpForward(mtpIn, prev), p.m.MTPForward(mtpIn, prev))
			if split {
				want, got := p.m.Draft(fill), p.e.Draft(fill)
				if len(got) != len(fill) || !slices.EqualFunc(got, want, slices.Equal) {
					t.Fatalf("a fill with K 0 drafted %v, model %v", got, want)
				}
			}
			want, got := p.m.Draft(seqs), p.e.Draft(seqs)
			for i := range lens {
				if len(want[i]) != k || !slices.Equal(got[i], want[i]) {
					t.Fatalf("sequence %d: Draft %v, model %v", i, got[i], want[i])
				}
			}
			p.sameKV(t, "after drafting")
		})
	}
}

// TestTheSchedulerGeneratesTheSameTokensOverTheExecutor runs the same
// greedy requests through the scheduler over the CPU model and over the
// Executor on the host Ops: plainly and with EAGLE speculation, every
// request gets the same tokens. With speculation, the Executor's drafts
// decide only how many tokens a step emits, so the tokens are also plain
// decoding's.
func TestTheSchedulerGeneratesTheSameTokensOverTheExecutor(t *testing.T) {
	t.Parallel()
	const pages, pageSize = 128, 4
	cfg := nano(t)
	w := model.Synth(cfg, 3)
	var reqs []*sched.Request
	for i, n := range []int{3, 17, 70} {
		prompt := make([]int32, n)
		for q := range prompt {
			prompt[q] = tok(i, q)
		}
		reqs = append(reqs, &sched.Request{ID: fmt.Sprint(i), Prompt: prompt,
			Params: sched.Params{MaxNewTokens: 12, IgnoreEOS: true}})
	}
	generate := func(sc sched.Config, exec sched.Executor) [][]int32 {
		sc.MaxTotalTokens, sc.PageSize, sc.ContextLength = pages*pageSize, pageSize, cfg.MaxPositionEmbeddings
		sc.ChunkedPrefillSize = 32 // the long prompt in chunks
		s, err := sched.New(sc, exec, nil, cfg.VocabSize, nil)
		if err != nil {
			t.Fatal(err)
		}
		go s.Run()
		defer s.Shutdown(context.Background())
		out := make([][]int32, len(reqs))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		streams := make([]*sched.Stream, len(reqs))
		for i, r := range reqs {
			if streams[i], err = s.Submit(r); err != nil {
				t.Fatal(err)
			}
		}
		for i, st := range streams {
			for done := false; !done; {
				evs, err := st.Next(ctx)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				for _, ev := range evs {
					out[i] = append(out[i], ev.Tokens...)
					done = done || ev.Finish != nil
				}
			}
		}
		return out
	}
	for _, sc := range []sched.Config{{}, {SpeculativeAlgorithm: "EAGLE", SpeculativeNumSteps: 3}} {
		t.Run(fmt.Sprintf("speculative %q", sc.SpeculativeAlgorithm), func(t *testing.T) {
			m := model.New(cfg, w, kernels.Default(), model.NewKVCache(cfg, pages, pageSize))
			want := generate(sc, m)
			e, err := NewExecutor(cfg, w, NewHostOps(kernels.Default()), pages, pageSize, sc.Speculative())
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			got := generate(sc, e)
			for i := range reqs {
				if len(want[i]) != 12 || !slices.Equal(got[i], want[i]) {
					t.Fatalf("request %d: %v over the Executor, %v over the model", i, got[i], want[i])
				}
			}
		})
	}
}

// countingOps counts a host Ops' allocations, and fails its Err on demand.
type countingOps struct {
	Ops
	allocs, live int
	liveAtClose  int
	fail         error
}

func (c *countingOps) Alloc(rows, cols int) Tensor {
	c.allocs++
	c.live++
	return c.Ops.Alloc(rows, cols)
}
func (c *countingOps) AllocInts(n int) Ints { c.allocs++; c.live++; return c.Ops.AllocInts(n) }
func (c *countingOps) UploadRope(r *kernels.Rope) Rope {
	c.allocs += 2
	c.live += 2
	return c.Ops.UploadRope(r)
}
func (c *countingOps) Free(m Mem)   { c.live--; c.Ops.Free(m) }
func (c *countingOps) Err() error   { return c.fail }
func (c *countingOps) Close() error { c.liveAtClose = c.live; return c.Ops.Close() }

func decodeBatch(slots [][]int32, pos int) []model.Seq {
	var seqs []model.Seq
	for j, s := range slots {
		seqs = append(seqs, model.Seq{Tokens: []int32{tok(j, pos)}, Pos: pos, Slots: s[:pos+1]})
	}
	return seqs
}

// TestTheExecutorReusesItsScratchAndFreesEverything: once the Executor has
// seen its largest batch, smaller batches allocate nothing in the Ops; and
// Close frees every allocation before it closes the Ops.
func TestTheExecutorReusesItsScratchAndFreesEverything(t *testing.T) {
	t.Parallel()
	cfg := nano(t)
	ops := &countingOps{Ops: NewHostOps(kernels.Default())}
	e, err := NewExecutor(cfg, model.Synth(cfg, 3), ops, 64, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	slots := [][]int32{slotsOn(pagesFrom(0, 32), 4, 128), slotsOn(pagesFrom(32, 32), 4, 128)}
	var prompts []model.Seq
	for j := range slots {
		toks := make([]int32, 80)
		for q := range toks {
			toks[q] = tok(j, q)
		}
		prompts = append(prompts, model.Seq{Tokens: toks, Slots: slots[j][:80], Logits: model.AllRows})
	}
	e.Forward(prompts)
	e.Forward(decodeBatch(slots, 80))
	e.Draft([]model.DraftSeq{{Seq: decodeBatch(slots, 81)[0], Hidden: kernels.Mat{Rows: 1}, K: 3}})
	before := ops.allocs
	for pos := 82; pos < 90; pos++ {
		e.Forward(decodeBatch(slots, pos))
		e.Forward(decodeBatch(slots[:1], pos+10))
		e.Draft([]model.DraftSeq{{Seq: decodeBatch(slots, pos)[1], Hidden: kernels.Mat{Rows: 1}, K: 2}})
	}
	if ops.allocs != before {
		t.Errorf("smaller batches after the largest allocated %d times", ops.allocs-before)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if ops.liveAtClose != 0 {
		t.Errorf("%d allocations still live when the Executor closed its Ops", ops.liveAtClose)
	}
}

// TestAFailedOpIsFatal: once the Ops report a failure, Forward panics with
// an error that wraps it, and NewExecutor returns one when the upload fails.
func TestAFailedOpIsFatal(t *testing.T) {
	t.Parallel()
	cfg := nano(t)
	w := model.Synth(cfg, 3)
	lost := errors.New("device lost")
	ops := &countingOps{Ops: NewHostOps(kernels.Default())}
	e, err := NewExecutor(cfg, w, ops, 16, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ops.fail = lost
	func() {
		defer func() {
			err, _ := recover().(error)
			if !errors.Is(err, lost) {
				t.Errorf("Forward after a failed op panicked with %v, want the Ops' error", err)
			}
		}()
		e.Forward([]model.Seq{{Tokens: []int32{1, 2}, Slots: []int32{0, 1}}})
		t.Error("Forward after a failed op returned")
	}()
	bad := &countingOps{Ops: NewHostOps(kernels.Default()), fail: lost}
	if _, err := NewExecutor(cfg, w, bad, 16, 4, false); !errors.Is(err, lost) {
		t.Errorf("NewExecutor over failing Ops: %v, want the Ops' error", err)
	}
	if bad.liveAtClose != 0 {
		t.Errorf("the failed NewExecutor left %d allocations live", bad.liveAtClose)
	}
}
