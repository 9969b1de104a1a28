package cudaexec

import (
	"fmt"

	"github.com/glmbench/glmbench/engine/model"
)

// DefaultCUDAGraphMaxBS is the largest decode batch that replays a graph
// by default: the cuda_graph_max_bs of the SGLang server on a large GPU
// whose server args the project keeps (shared/reference).
const DefaultCUDAGraphMaxBS = 1024

// GraphBuckets are the batch sizes decode graphs are captured for, up to
// maxBS: SGLang's schedule, as its server args list them (cuda_graph_bs:
// 1, 2, 4, 8, 16, 32, 64, 128, 256, then every 128), with maxBS itself
// last when it is none of those. A batch replays the graph of the smallest
// bucket that holds it, padded.
func GraphBuckets(maxBS int) []int {
	var out []int
	for b := 1; b <= min(maxBS, 256); b *= 2 {
		out = append(out, b)
	}
	for b := 384; b <= maxBS; b += 128 {
		out = append(out, b)
	}
	if maxBS > 0 && out[len(out)-1] != maxBS {
		out = append(out, maxBS)
	}
	return out
}

// GraphStats count an Executor's decode graphs.
type GraphStats struct {
	// Captures is how many graphs were captured: a bucket's first batch,
	// or its first after the scratch a graph used moved.
	Captures int
	// Replays is how many batches replayed a graph.
	Replays int
}

// graphs are UseGraphs' state: per bucket its graph, and the scratch the
// graphs use, apart from the direct launches' (which grows with prefills
// and would move under a graph).
type graphs struct {
	g          Grapher
	buckets    []int
	byBucket   map[int]*bucketGraph
	f32        map[string]Tensor // the graphs' scratch, by name (Executor.mat's)
	i32        map[string]Ints
	moves      int  // reallocations of f32 and i32
	active     bool // the Executor's scratch maps are f32 and i32
	maxVisible int  // Batch.MaxVisible: the most keys a row can see
	stats      GraphStats

	// The host side of a graph batch, kept between calls.
	tokens, rowSeq, rowPos, rowSlot, seqSlots, seqOff []int32
}

// bucketGraph is one bucket's graph and the scratch moves it was captured at.
type bucketGraph struct {
	g     Graph
	moves int
}

// UseGraphs makes decode-only batches of up to maxBS sequences replay
// CUDA graphs, one per bucket of GraphBuckets(maxBS), captured lazily on
// a bucket's first batch; maxBS ≤ 0 turns them off. It reports whether
// graphs are on: only an Ops that is a Grapher (the GPU's) has them;
// elsewhere every batch launches directly, as it does without UseGraphs.
// Prefill, mixed and MTP batches always launch directly.
func (e *Executor) UseGraphs(maxBS int) bool {
	e.dropGraphs()
	g, ok := e.ops.(Grapher)
	if !ok || maxBS <= 0 { // a Grapher: NewExecutor kept the dummy page
		return false
	}
	e.gr = &graphs{g: g, buckets: GraphBuckets(maxBS), byBucket: map[int]*bucketGraph{},
		f32: map[string]Tensor{}, i32: map[string]Ints{},
		maxVisible: min(e.cfg.MaxPositionEmbeddings, int(e.dummySlot))}
	return true
}

// GraphStats returns the decode graphs' counts (zero without UseGraphs).
func (e *Executor) GraphStats() GraphStats {
	if e.gr == nil {
		return GraphStats{}
	}
	return e.gr.stats
}

// dropGraphs destroys the graphs and frees their scratch.
func (e *Executor) dropGraphs() {
	gr := e.gr
	if gr == nil {
		return
	}
	for _, bg := range gr.byBucket {
		gr.g.DestroyGraph(bg.g)
	}
	for _, t := range gr.f32 {
		e.ops.Free(t.Mem)
	}
	for _, v := range gr.i32 {
		e.ops.Free(v.Mem)
	}
	e.gr = nil
}

// moved notes a reallocation of the scratch in use (Executor.mat's):
// in graph mode the graphs' scratch moved, and the graphs captured before
// read freed memory.
func (e *Executor) moved() {
	if e.gr != nil && e.gr.active {
		e.gr.moves++
	}
}

// scratchMoves is the count of moves of every scratch a graph reads: the
// Executor's and the Ops' own.
func (gr *graphs) scratchMoves() int { return gr.moves + gr.g.GraphScratchMoves() }

// bucket returns the smallest bucket holding n sequences (0: none).
func (gr *graphs) bucket(n int) int {
	for _, b := range gr.buckets {
		if b >= n {
			return b
		}
	}
	return 0
}

// decodeGraph runs seqs by replaying their bucket's graph (capturing it
// first when there is none yet, or the scratch it used has moved) and
// returns the Output; nil when seqs are not a decode-only batch a graph
// takes, for Forward to launch directly.
//
// The batch is padded to the bucket with rows of their own sequences
// (token 0 at position 0) that write the dummy KV slot and read only it;
// their logits are never downloaded. Every list a graph reads lies at a
// fixed address: the graphs' scratch, uploaded before the replay; the
// list of the sequences' slots at its capacity for the bucket, so that
// the kernels' arguments stay what they were at capture. A capture is
// preceded by the same pass launched directly on the same scratch, which
// sizes the scratch (no allocation may happen in a capture) and gives the
// batch's results, since a capture runs nothing.
func (e *Executor) decodeGraph(seqs []model.Seq) *model.Output {
	gr := e.gr
	if gr == nil || len(seqs) == 0 {
		return nil
	}
	B := len(seqs)
	Bp := gr.bucket(B)
	if Bp == 0 {
		return nil
	}
	for _, s := range seqs {
		if len(s.Tokens) != 1 || s.Logits != model.LastRow || s.Pos+1 > gr.maxVisible || len(s.Slots) < s.Pos+1 {
			return nil // Forward launches it directly (and checks it)
		}
	}
	gr.tokens, gr.rowSeq, gr.rowPos, gr.rowSlot = gr.tokens[:0], gr.rowSeq[:0], gr.rowPos[:0], gr.rowSlot[:0]
	gr.seqSlots, gr.seqOff = gr.seqSlots[:0], gr.seqOff[:0]
	for j := range Bp {
		gr.seqOff = append(gr.seqOff, int32(len(gr.seqSlots)))
		gr.rowSeq = append(gr.rowSeq, int32(j))
		if j >= B { // padding
			gr.tokens, gr.rowPos, gr.rowSlot = append(gr.tokens, 0), append(gr.rowPos, 0), append(gr.rowSlot, e.dummySlot)
			gr.seqSlots = append(gr.seqSlots, e.dummySlot)
			continue
		}
		s := seqs[j]
		gr.tokens, gr.rowPos, gr.rowSlot = append(gr.tokens, s.Tokens[0]), append(gr.rowPos, int32(s.Pos)), append(gr.rowSlot, s.Slots[s.Pos])
		gr.seqSlots = append(gr.seqSlots, s.Slots[:s.Pos+1]...)
	}
	gr.seqOff = append(gr.seqOff, int32(len(gr.seqSlots)))

	// The graphs' scratch, for the uploads, the direct pass and the capture.
	df32, di32 := e.f32, e.i32
	e.f32, e.i32, gr.active = gr.f32, gr.i32, true
	gr.g.GraphScratch(true)
	defer func() {
		e.f32, e.i32, gr.active = df32, di32, false
		gr.g.GraphScratch(false)
	}()
	tokens := e.upInts("tokens", gr.tokens)
	seqSlots := e.ints("seq_slots", Bp*gr.maxVisible)
	e.ops.UploadInts(seqSlots.Slice(0, len(gr.seqSlots)), gr.seqSlots)
	b := Batch{T: Bp, RowSeq: e.upInts("row_seq", gr.rowSeq), RowPos: e.upInts("row_pos", gr.rowPos),
		RowSlot: e.upInts("row_slot", gr.rowSlot), SeqSlots: seqSlots, SeqOff: e.upInts("seq_off", gr.seqOff),
		MaxVisible: gr.maxVisible}

	bg := gr.byBucket[Bp]
	if bg != nil && bg.moves != gr.scratchMoves() {
		gr.g.DestroyGraph(bg.g)
		delete(gr.byBucket, Bp)
		bg = nil
	}
	if bg == nil {
		hidden, logits := e.graphPass(b, tokens)
		out := e.graphOutput(B, hidden, logits)
		moves := gr.scratchMoves()
		gr.g.BeginCapture()
		e.graphPass(b, tokens)
		g := gr.g.EndCapture()
		e.check()
		if gr.scratchMoves() != moves {
			panic(fmt.Sprintf("cudaexec: the decode graph of bucket %d moved its scratch while it was captured", Bp))
		}
		gr.byBucket[Bp] = &bucketGraph{g: g, moves: moves}
		gr.stats.Captures++
		return out
	}
	gr.g.Replay(bg.g)
	gr.stats.Replays++
	hidden, logits := e.graphTensors(Bp)
	return e.graphOutput(B, hidden, logits)
}

// graphPass queues a graph batch's forward pass: body, then model.norm
// and lm_head on every row (each row of a decode-only batch wants its
// logits; the padding's are dropped).
func (e *Executor) graphPass(b Batch, tokens Ints) (hidden, logits Tensor) {
	x := e.body(b, tokens)
	hidden, logits = e.graphTensors(b.T)
	e.ops.RMSNorm(hidden, x, e.w.norm, float32(e.cfg.RMSNormEps))
	e.ops.MatMulT(logits, hidden, e.w.lmHead)
	return hidden, logits
}

// graphTensors are the final hidden rows and logits of a graph batch of n rows.
func (e *Executor) graphTensors(n int) (hidden, logits Tensor) {
	return e.mat("hidden", n, e.cfg.HiddenSize), e.mat("logits", n, e.cfg.VocabSize)
}

// graphOutput downloads the first B rows of hidden and logits (the
// sequences', one each) into the Output.
func (e *Executor) graphOutput(B int, hidden, logits Tensor) *model.Output {
	cfg := e.cfg
	out := &model.Output{First: make([]int, B),
		Hidden: e.hostMat("hidden", B, cfg.HiddenSize), Logits: e.hostMat("logits", B, cfg.VocabSize)}
	for j := range out.First {
		out.First[j] = j
	}
	e.ops.Download(out.Hidden, hidden.RowRange(0, B))
	e.ops.Download(out.Logits, logits.RowRange(0, B))
	e.check()
	return out
}
