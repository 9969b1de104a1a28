package model

import (
	"fmt"
	"math"

	"github.com/glmbench/glmbench/kernels"
)

// Model runs the forward pass of a checkpoint on a kernels backend over a
// paged KV cache. It is not safe for concurrent use: one goroutine (the
// scheduler's) drives it, batch by batch.
type Model struct {
	Cfg *Config
	W   *Weights
	K   kernels.Backend
	KV  *KVCache
	// Naive switches MLA from the absorbed form to the expanded one (keys and
	// values up-projected per head): slower, and the reference the absorbed
	// form is tested against.
	Naive bool

	rope    *kernels.Rope // qk_rope_head_dim wide, for MLA and the indexer
	ws      workspace     // the forward pass's own scratch
	workers []*workspace  // each parallel worker's scratch
	rowsOf  [][]int32     // per batch row: the KV slots it attends to
	items   []indexItem
	heads   []int32 // the batch rows that get logits (head)
}

// New returns a model over weights w and cache kv, running on k.
func New(cfg *Config, w *Weights, k kernels.Backend, kv *KVCache) *Model {
	return &Model{
		Cfg: cfg, W: w, K: k, KV: kv,
		rope: kernels.NewRope(cfg.QKRopeHeadDim, cfg.MaxPositionEmbeddings, cfg.RopeParameters.RopeTheta),
	}
}

// Pool returns the model's KV cache.
func (m *Model) Pool() *KVCache { return m.KV }

// Rows says which rows of a sequence's new tokens produce logits.
type Rows int

const (
	// LastRow gives logits for the last new token only (prefill, decode).
	LastRow Rows = iota
	// AllRows gives logits for every new token (echo logprobs, speculative verify).
	AllRows
	// NoRows gives none (a prefill chunk that is not the last).
	NoRows
)

// Seq is one sequence's share of a batch: Tokens are new, at positions
// Pos, Pos+1, …; Slots holds the KV slot of every position from 0 to the
// last new one. The model writes the new tokens' keys into their slots.
type Seq struct {
	Tokens []int32
	Pos    int
	Slots  []int32
	Logits Rows
}

// Output holds a forward pass's results. Its matrices are views into the
// model's workspace, valid until the next call.
type Output struct {
	// Logits has one row per requested row, sequences in batch order.
	Logits kernels.Mat
	// Hidden holds the same rows' final hidden state after model.norm (what
	// lm_head reads; the MTP layer's input).
	Hidden kernels.Mat
	// First[j] is the first row of sequence j in Logits and Hidden; its rows
	// end where the next sequence's begin.
	First []int
}

// SeqRows returns sequence j's logits and hidden rows.
func (o *Output) SeqRows(j int) (logits, hidden kernels.Mat) {
	end := o.Logits.Rows
	if j+1 < len(o.First) {
		end = o.First[j+1]
	}
	return o.Logits.Slice(o.First[j], end, 0, o.Logits.Cols), o.Hidden.Slice(o.First[j], end, 0, o.Hidden.Cols)
}

// workspace keeps the forward pass's scratch buffers between calls, so a
// steady stream of batches allocates nothing once it has seen its largest.
type workspace struct {
	bufs  map[string][]float32
	ints  map[string][]int32
	lists map[string][][]int32
}

// int32Lists returns the named n empty int32 lists, which keep their
// capacity between calls.
func (ws *workspace) int32Lists(name string, n int) [][]int32 {
	if ws.lists == nil {
		ws.lists = map[string][][]int32{}
	}
	l := ws.lists[name]
	for len(l) < n {
		l = append(l, nil)
	}
	l = l[:n]
	for i := range l {
		l[i] = l[i][:0]
	}
	ws.lists[name] = l
	return l
}

// get returns the named float32 scratch slice of n elements.
func (ws *workspace) get(name string, n int) []float32 { return grab(&ws.bufs, name, n) }

// int32s returns the named int32 scratch slice of n elements.
func (ws *workspace) int32s(name string, n int) []int32 { return grab(&ws.ints, name, n) }

// grab returns the named scratch slice of n elements, growing it (by a
// quarter more than asked, so slowly growing batches settle) when short.
func grab[T any](bufs *map[string][]T, name string, n int) []T {
	if *bufs == nil {
		*bufs = map[string][]T{}
	}
	b := (*bufs)[name]
	if cap(b) < n {
		b = make([]T, n, n+n/4)
		(*bufs)[name] = b
	}
	return b[:n]
}

func (ws *workspace) mat(name string, rows, cols int) kernels.Mat {
	return kernels.NewMat(ws.get(name, rows*cols), rows, cols)
}

// rowInfo is where one batch row sits.
type rowInfo struct {
	pos  []int32 // position of each row
	slot []int32 // KV slot of each row
	seq  []int32 // sequence index of each row
}

// Forward runs the main model over a batch that may mix prefill chunks and
// decode tokens of many sequences. Each row's result depends only on its
// own sequence (the kernels are batch-invariant and attention is per
// sequence), so a sequence computes the same alone or in any batch.
func (m *Model) Forward(seqs []Seq) *Output {
	cfg := m.Cfg
	T, ri := m.begin(seqs)
	x := m.ws.mat("x", T, cfg.HiddenSize)
	t := 0
	for _, s := range seqs {
		for _, tok := range s.Tokens {
			copy(x.Row(t), m.W.Embed.Row(int(tok)))
			t++
		}
	}
	for l := range m.W.Layers {
		m.layer(l, &m.W.Layers[l], x, seqs, ri)
	}
	return m.head(x, seqs, m.W.Norm, "")
}

// begin starts a forward pass (Forward's or MTPForward's) over seqs: it
// checks that every sequence has a slot for each position up to its last new
// token and that no position passes max_position_embeddings, readies the
// workers' scratch, and lays out the batch's T rows: positions, slots and
// owners.
func (m *Model) begin(seqs []Seq) (T int, ri rowInfo) {
	for _, s := range seqs {
		if len(s.Slots) < s.Pos+len(s.Tokens) {
			panic(fmt.Sprintf("model: sequence at %d with %d new tokens has %d slots", s.Pos, len(s.Tokens), len(s.Slots)))
		}
		T += len(s.Tokens)
	}
	m.prepareWorkers()
	ri = rowInfo{
		pos:  m.ws.int32s("pos", T),
		slot: m.ws.int32s("slot", T),
		seq:  m.ws.int32s("seq", T),
	}
	t := 0
	for j, s := range seqs {
		for i := range s.Tokens {
			p := s.Pos + i
			if p >= m.Cfg.MaxPositionEmbeddings {
				panic(fmt.Sprintf("model: position %d beyond max_position_embeddings %d", p, m.Cfg.MaxPositionEmbeddings))
			}
			ri.pos[t], ri.slot[t], ri.seq[t] = int32(p), s.Slots[p], int32(j)
			t++
		}
	}
	return T, ri
}

// head applies a final norm (model.norm, or the MTP's shared_head.norm) and
// lm_head to the rows that want logits. prefix keeps the MTP's output apart
// from the main model's in the workspace.
func (m *Model) head(x kernels.Mat, seqs []Seq, norm []float32, prefix string) *Output {
	cfg := m.Cfg
	out := &Output{First: make([]int, len(seqs))}
	m.heads = HeadRows(seqs, out.First, m.heads[:0])
	n := len(m.heads)
	sel := m.ws.mat(prefix+"head_in", n, cfg.HiddenSize)
	for r, t := range m.heads {
		copy(sel.Row(r), x.Row(int(t)))
	}
	out.Hidden = m.ws.mat(prefix+"hidden", n, cfg.HiddenSize)
	m.K.RMSNorm(out.Hidden, sel, norm, float32(cfg.RMSNormEps))
	out.Logits = m.ws.mat(prefix+"logits", n, cfg.VocabSize)
	m.K.MatMulT(out.Logits, out.Hidden, m.W.LMHead)
	return out
}

// HeadRows sets first[j] to sequence j's first row in a forward pass's
// Output and appends to rows, in order, the batch row of every row that
// gets logits: a LastRow sequence's last new token, each of an AllRows
// sequence's, none of a NoRows one's.
func HeadRows(seqs []Seq, first []int, rows []int32) []int32 {
	t := 0
	for j, s := range seqs {
		first[j] = len(rows)
		switch s.Logits {
		case LastRow:
			rows = append(rows, int32(t+len(s.Tokens)-1))
		case AllRows:
			for i := range s.Tokens {
				rows = append(rows, int32(t+i))
			}
		}
		t += len(s.Tokens)
	}
	return rows
}

// layer runs decoder layer l (its KV cache layer is l too) in place on x.
func (m *Model) layer(l int, ly *Layer, x kernels.Mat, seqs []Seq, ri rowInfo) {
	cfg := m.Cfg
	T, H := x.Rows, cfg.HiddenSize
	eps := float32(cfg.RMSNormEps)
	xn := m.ws.mat("xn", T, H)
	m.K.RMSNorm(xn, x, ly.InputNorm, eps)
	attn := m.ws.mat("attn_out", T, H)
	m.attention(l, &ly.Attn, xn, attn, seqs, ri)
	m.K.Add(x.Data[:T*H], x.Data[:T*H], attn.Data[:T*H])

	m.K.RMSNorm(xn, x, ly.PostNorm, eps)
	ffn := m.ws.mat("ffn_out", T, H)
	if ly.MoE != nil {
		m.moe(ly.MoE, xn, ffn)
	} else {
		mlp := ly.MLP
		m.K.SwiGLU(ffn, xn, mlp.Gate, mlp.Up, mlp.Down, m.ws.get("swiglu", 2*T*mlp.Gate.Rows))
	}
	m.K.Add(x.Data[:T*H], x.Data[:T*H], ffn.Data[:T*H])
}

// attention is MLA with DSA: project, write this batch's keys to the cache,
// select each row's keys, attend, project out. xn is the normed input; out
// receives o_proj's output.
func (m *Model) attention(l int, a *Attention, xn, out kernels.Mat, seqs []Seq, ri rowInfo) {
	cfg := m.Cfg
	T := xn.Rows
	heads, dn, dr, dv, r := cfg.NumAttentionHeads, cfg.QKNopeHeadDim, cfg.QKRopeHeadDim, cfg.VHeadDim, cfg.KVLoraRank
	dq := cfg.QKHeadDim() // dn + dr
	eps := float32(cfg.RMSNormEps)

	// Queries through the q latent: qr = norm(W_qa x), q = W_qb qr, per head [nope | rope].
	qa := m.ws.mat("qa", T, cfg.QLoraRank)
	m.K.MatMulT(qa, xn, a.QAProj)
	qr := m.ws.mat("qr", T, cfg.QLoraRank)
	m.K.RMSNorm(qr, qa, a.QANorm, eps)
	q := m.ws.mat("q", T, heads*dq)
	m.K.MatMulT(q, qr, a.QBProj)
	for h := range heads {
		m.K.RoPE(q.Slice(0, T, h*dq+dn, (h+1)*dq), ri.pos, m.rope)
	}

	// Keys and values through the KV latent: [c | k_rope], c normed, k_rope rotated.
	kva := m.ws.mat("kva", T, r+dr)
	m.K.MatMulT(kva, xn, a.KVAProj)
	c := m.ws.mat("c", T, r)
	m.K.RMSNorm(c, kva.Slice(0, T, 0, r), a.KVANorm, eps)
	kpe := kva.Slice(0, T, r, r+dr)
	m.K.RoPE(kpe, ri.pos, m.rope)

	// The indexer's query, key and head weights.
	ix := &a.Indexer
	hi, di := cfg.IndexNHeads, cfg.IndexHeadDim
	iq := m.ws.mat("iq", T, hi*di)
	m.K.MatMulT(iq, qr, ix.WqB)
	for h := range hi {
		// The indexer's rope part comes first in each head, the other way round from MLA.
		m.K.RoPE(iq.Slice(0, T, h*di, h*di+dr), ri.pos, m.rope)
	}
	ikRaw := m.ws.mat("ik_raw", T, di)
	m.K.MatMulT(ikRaw, xn, ix.Wk)
	ik := m.ws.mat("ik", T, di)
	m.K.LayerNorm(ik, ikRaw, ix.KNormW, ix.KNormB, IndexerNormEps)
	m.K.RoPE(ik.Slice(0, T, 0, dr), ri.pos, m.rope)
	iw := m.ws.mat("iw", T, hi)
	m.K.MatMulT(iw, xn, ix.WeightsProj)
	wscale := float32(1 / math.Sqrt(float64(hi)) / math.Sqrt(float64(di)))
	for i := range iw.Data[:T*hi] {
		iw.Data[i] *= wscale
	}

	// Write the new tokens' cache rows: [c | k_rope] and the indexer key.
	cache, ikeys := m.KV.Layer(l), m.KV.IndexKeys(l)
	for t := range T {
		row := cache.Row(int(ri.slot[t]))
		copy(row[:r], c.Row(t))
		copy(row[r:r+dr], kpe.Row(t))
		for d, v := range ik.Row(t) {
			ikeys.Row(d)[ri.slot[t]] = v
		}
	}

	// Each row's keys: all visible ones, or the indexer's top-k.
	m.selectKeys(ikeys, iq, iw, seqs)

	vo := m.ws.mat("vo", T, heads*dv)
	scale := float32(1 / math.Sqrt(float64(dq)))
	if m.Naive {
		m.attendNaive(a, q, cache, vo, scale)
	} else {
		m.attendAbsorbed(a, q, cache, vo, scale)
	}
	m.K.MatMulT(out, vo, a.OProj)
}

// IndexerNormEps is the indexer's LayerNorm epsilon (DeepSeek-V3.2 and GLM-5 use 1e-6).
const IndexerNormEps = 1e-6

// attendAbsorbed is MLA's absorbed form: per head, q̃ = q_nope · W_UK_h and
// the query [q̃ | q_rope] attends over the cached [c | k_rope] with the
// latent c as values; the latent result o is lifted by W_UV_h. The
// attention of every (row, head) pair runs in one parallel pass, not one
// per head.
func (m *Model) attendAbsorbed(a *Attention, q, cache, vo kernels.Mat, scale float32) {
	cfg := m.Cfg
	T := q.Rows
	heads, dn, dr, dv, r := cfg.NumAttentionHeads, cfg.QKNopeHeadDim, cfg.QKRopeHeadDim, cfg.VHeadDim, cfg.KVLoraRank
	dq, dk := cfg.QKHeadDim(), r+dr
	keys := cache.Slice(0, cache.Rows, 0, dk)
	values := cache.Slice(0, cache.Rows, 0, r)
	qt := m.ws.mat("q_absorbed", T, heads*dk) // per head [q̃ | q_rope]
	o := m.ws.mat("o_latent", T, heads*r)     // per head the latent result
	for h := range heads {
		m.K.MatMul(qt.Slice(0, T, h*dk, h*dk+r), q.Slice(0, T, h*dq, h*dq+dn), a.uk[h])
		for t := range T {
			copy(qt.Row(t)[h*dk+r:(h+1)*dk], q.Row(t)[h*dq+dn:(h+1)*dq])
		}
	}
	m.attendRows(o, qt, keys, values, heads, scale)
	for h := range heads {
		m.K.MatMulT(vo.Slice(0, T, h*dv, (h+1)*dv), o.Slice(0, T, h*r, (h+1)*r), a.uv[h])
	}
}

// attendRows sets o[t, h·r : (h+1)·r] (r = values.Cols) to head h's
// attention of row t: query qt[t, h·dk : (h+1)·dk] (dk = keys.Cols) over
// the cache rows m.rowsOf[t], GatherAttention's softmax(scale · q·k)
// weighing the values.
func (m *Model) attendRows(o, qt, keys, values kernels.Mat, heads int, scale float32) {
	T, r, dk := qt.Rows, values.Cols, keys.Cols
	attend := func(worker, i int) { // item i is row i/heads, head i%heads
		t, h := i/heads, i%heads
		rows := m.rowsOf[t]
		m.K.GatherAttention(o.Row(t)[h*r:(h+1)*r], qt.Row(t)[h*dk:(h+1)*dk], keys, values, rows, scale,
			m.worker(worker).get("scores", len(rows)))
	}
	if T == 1 {
		// One row (a lone decode step): a few µs of work, less than starting
		// goroutines costs when the other cores are busy.
		for h := range heads {
			attend(0, h)
		}
	} else {
		parallelFor(T*heads, attend)
	}
}

// attendNaive is MLA's expanded form: keys [W_UK_h c ; k_rope] and values
// W_UV_h c are built per head for every selected row, then plain attention.
func (m *Model) attendNaive(a *Attention, q, cache, vo kernels.Mat, scale float32) {
	cfg := m.Cfg
	T := q.Rows
	heads, dn, dr, dv, r := cfg.NumAttentionHeads, cfg.QKNopeHeadDim, cfg.QKRopeHeadDim, cfg.VHeadDim, cfg.KVLoraRank
	dq := cfg.QKHeadDim()
	for t := range T {
		rows := m.rowsOf[t]
		n := len(rows)
		lat := m.ws.mat("naive_c", n, r)
		for i, s := range rows {
			copy(lat.Row(i), cache.Row(int(s))[:r])
		}
		for h := range heads {
			k := m.ws.mat("naive_k", n, dq)
			m.K.MatMulT(k.Slice(0, n, 0, dn), lat, a.uk[h]) // k_nope = W_UK_h c
			for i, s := range rows {
				copy(k.Row(i)[dn:], cache.Row(int(s))[r:r+dr])
			}
			v := m.ws.mat("naive_v", n, dv)
			m.K.MatMulT(v, lat, a.uv[h])
			m.K.GatherAttention(vo.Row(t)[h*dv:(h+1)*dv], q.Row(t)[h*dq:(h+1)*dq], k, v, nil, scale, m.ws.get("scores", n))
		}
	}
}

// selectKeys fills m.rowsOf: for every batch row, the cache slots it attends
// to in position order. DSA picks, per query, the index_topk keys of
// highest indexer score I(t,s) = Σ_h w_h · ReLU(q_h · k_s) among the visible
// ones (s ≤ t); when no more than index_topk are visible, it is dense causal
// attention.
//
// The work is cut into items of up to indexBlock rows of one sequence and
// shared among workers. An item gathers its sequence's visible indexer keys
// into a dense matrix once, scores all its rows in one product, then keeps
// each row's top-k.
func (m *Model) selectKeys(ikeys, iq, iw kernels.Mat, seqs []Seq) {
	cfg := m.Cfg
	topk := cfg.IndexTopK
	if cap(m.rowsOf) < iq.Rows {
		m.rowsOf = make([][]int32, iq.Rows)
	}
	m.rowsOf = m.rowsOf[:iq.Rows]
	picked := m.ws.int32s("topk", iq.Rows*topk)
	m.items = m.items[:0]
	t := 0
	for j, s := range seqs {
		for i := 0; i < len(s.Tokens); {
			p := s.Pos + i
			if p+1 <= topk {
				m.rowsOf[t] = s.Slots[:p+1]
				t, i = t+1, i+1
				continue
			}
			n := min(indexBlock, len(s.Tokens)-i)
			m.items = append(m.items, indexItem{seq: int32(j), row: int32(t), first: int32(i), n: int32(n)})
			t, i = t+n, i+n
		}
	}
	parallelFor(len(m.items), func(worker, k int) {
		it := m.items[k]
		m.indexRows(m.worker(worker), ikeys, iq, iw, &seqs[it.seq], it, picked)
	})
}

// indexBlock is how many rows of one sequence are scored together.
const indexBlock = 32

// minIndexRun is the shortest average run of consecutive slots worth one
// product each; below it the indexer gathers the keys first.
const minIndexRun = 32

// indexItem is a block of rows of one sequence that needs the indexer.
type indexItem struct{ seq, row, first, n int32 }

// indexRows runs the indexer for one block of rows.
func (m *Model) indexRows(ws *workspace, ikeys, iq, iw kernels.Mat, s *Seq, it indexItem, picked []int32) {
	cfg := m.Cfg
	topk, hi, di := cfg.IndexTopK, cfg.IndexNHeads, cfg.IndexHeadDim
	n := s.Pos + int(it.first+it.n) // keys visible to the block's last row
	rows := int(it.n)
	q := kernels.NewMat(iq.Data[int(it.row)*hi*di:(int(it.row)+rows)*hi*di], rows*hi, di)
	S := ws.mat("index_S", rows*hi, n)
	// Score every visible key for every row and head, one product per run of
	// consecutive slots: such a run is a dense block of the (transposed)
	// indexer-key pool, and the pool hands out pages in order, so a sequence
	// is usually a few long runs. When its slots are scattered (many short
	// runs), the keys are first gathered into one dense block instead, since
	// a product per short run costs more than the copy. Either way decode and
	// prefill rows use the same product, so a key scores the same bits
	// whichever way its query came.
	runs := 1
	for i := 1; i < n; i++ {
		if s.Slots[i] != s.Slots[i-1]+1 {
			runs++
		}
	}
	if n/runs >= minIndexRun {
		for a := 0; a < n; {
			b := a + 1
			for b < n && s.Slots[b] == s.Slots[b-1]+1 {
				b++
			}
			m.K.MatMul(S.Slice(0, rows*hi, a, b), q, ikeys.Slice(0, di, int(s.Slots[a]), int(s.Slots[a])+b-a))
			a = b
		}
	} else {
		keys := ws.mat("index_keys", di, n)
		for d := range di {
			src, dst := ikeys.Row(d), keys.Row(d)
			for i, slot := range s.Slots[:n] {
				dst[i] = src[slot]
			}
		}
		m.K.MatMul(S, q, keys)
	}
	score := ws.get("index_score", n)
	for r := range rows {
		t := int(it.row) + r
		p := s.Pos + int(it.first) + r
		sc := score[:p+1]
		clear(sc)
		for h := range hi {
			m.K.ReluAXPY(sc, iw.Row(t)[h], S.Row(r*hi + h)[:p+1])
		}
		m.keepTop(ws, sc, s.Slots, picked[t*topk:(t+1)*topk])
		m.rowsOf[t] = picked[t*topk : (t+1)*topk]
	}
}

// keepTop writes into out the slots of the len(out) highest scores, in
// position order; among equal scores at the boundary the earlier positions
// win, as kernels.TopK orders them. It finds the k-th largest score θ by
// quickselect on a copy, then takes every score above θ and the first ones
// equal to it in one pass, which leaves them in position order. For long
// rows it first drops every score below a threshold read off a sample of
// every 16th score (low enough that about twice k pass, so exact whenever at
// least k pass; otherwise it uses every score).
func (m *Model) keepTop(ws *workspace, score []float32, slots, out []int32) {
	k, n := len(out), len(score)
	vals := ws.get("topk_vals", n)
	idx := ws.int32s("topk_idx", n)
	c := 0
	if n >= 16*k {
		sample := ws.get("topk_sample", (n+15)/16)
		for i := range sample {
			sample[i] = score[16*i]
		}
		// A threshold at rank r of the sample passes about 16·r scores, here
		// about 1.25·k; if it passes fewer than k, try once more four times lower.
		for _, r := range [2]int{(5*k+63)/64 + 1, 4 * ((5*k+63)/64 + 1)} {
			if r > len(sample) {
				break
			}
			c = m.K.FilterGE(vals, idx, score, kthLargest(sample, r))
			if c >= k {
				break
			}
		}
	}
	if c < k { // no useful threshold: every score is a candidate
		copy(vals, score)
		for i := range idx {
			idx[i] = int32(i)
		}
		c = n
	}
	vals, idx = vals[:c], idx[:c]
	// The candidates are in position order; θ is the k-th largest of them.
	work := ws.get("topk_work", c)
	copy(work, vals)
	theta := kthLargest(work, k)
	above := 0
	for _, v := range vals {
		if v > theta {
			above++
		}
	}
	ties := k - above // how many scores equal to θ make the cut, earliest first
	j := 0
	for i, v := range vals {
		if v > theta || (v == theta && ties > 0) {
			if v == theta {
				ties--
			}
			out[j] = slots[idx[i]]
			j++
		}
	}
}

// kthLargest returns the k-th largest value of x (1-based), reordering x. NaN
// counts as −Inf. A small k keeps the best k in a short sorted list (one
// comparison for most elements); a larger one runs quickselect.
func kthLargest(x []float32, k int) float32 {
	if k <= 32 {
		var best [32]float32
		top := best[:k]
		for i := range top {
			top[i] = float32(math.Inf(-1))
		}
		for _, v := range x {
			if v > top[k-1] { // false for NaN
				j := k - 1
				for j > 0 && top[j-1] < v {
					top[j] = top[j-1]
					j--
				}
				top[j] = v
			}
		}
		return top[k-1]
	}
	for i, v := range x {
		if v != v {
			x[i] = float32(math.Inf(-1))
		}
	}
	lo, hi := 0, len(x)-1
	want := k - 1 // index in descending order
	for lo < hi {
		// Median of three as pivot, then a Hoare partition into ≥ pivot | ≤ pivot.
		mid := lo + (hi-lo)/2
		a, b, c := x[lo], x[mid], x[hi]
		pivot := max(min(a, b), min(max(a, b), c))
		i, j := lo, hi
		for i <= j {
			for x[i] > pivot {
				i++
			}
			for x[j] < pivot {
				j--
			}
			if i <= j {
				x[i], x[j] = x[j], x[i]
				i++
				j--
			}
		}
		switch {
		case want <= j:
			hi = j
		case want >= i:
			lo = i
		default:
			return x[want]
		}
	}
	return x[want]
}

// moe is the routed mixture of experts plus the shared expert, on the
// post-attention normed rows xn; out receives the sum.
func (m *Model) moe(e *MoE, xn, out kernels.Mat) {
	cfg := m.Cfg
	T, H := xn.Rows, cfg.HiddenSize
	k := cfg.NumExpertsPerTok
	route := m.route(e, xn)

	results := m.ws.mat("moe_results", T*k, H) // row t·k+i: expert route.idx[t][i] on row t
	m.experts(results, xn, route.idx, k, e.Experts)
	m.K.SwiGLU(out, xn, e.Shared.Gate, e.Shared.Up, e.Shared.Down, m.ws.get("swiglu", 2*T*e.Shared.Gate.Rows))
	m.combine(out, results, route.w, k)
}

// experts sets row t·k+i of results to expert idx[t·k+i]'s SwiGLU of row t
// of xn. Every expert runs once on the rows routed to it, gathered.
func (m *Model) experts(results, xn kernels.Mat, idx []int32, k int, experts []MLP) {
	T, H := xn.Rows, xn.Cols
	byExpert := m.ws.int32Lists("moe_by_expert", len(experts))
	for t := range T {
		for i := range k {
			ex := idx[t*k+i]
			byExpert[ex] = append(byExpert[ex], int32(t*k+i))
		}
	}
	for ex, slots := range byExpert {
		if len(slots) == 0 {
			continue
		}
		n := len(slots)
		in := m.ws.mat("moe_in", n, H)
		for j, sl := range slots {
			copy(in.Row(j), xn.Row(int(sl)/k))
		}
		y := m.ws.mat("moe_y", n, H)
		mlp := &experts[ex]
		m.K.SwiGLU(y, in, mlp.Gate, mlp.Up, mlp.Down, m.ws.get("swiglu", 2*n*mlp.Gate.Rows))
		for j, sl := range slots {
			copy(results.Row(int(sl)), y.Row(j))
		}
	}
}

// combine adds to row t of out Σ_i w[t·k+i] · results[t·k+i]. The sum runs
// in a fixed order (the shared expert already in out, then the experts by
// rank) so a row's result does not depend on its batch.
func (m *Model) combine(out, results kernels.Mat, w []float32, k int) {
	for t := range out.Rows {
		row := out.Row(t)
		for i := range k {
			m.K.AddScaled(row, w[t*k+i], results.Row(t*k+i))
		}
	}
}

// routing is the router's decision for a batch: for row t, experts
// idx[t·k : t·k+k] with weights w[…], highest-scoring first.
type routing struct {
	idx []int32
	w   []float32
}

// route is noaux_tc: sigmoid scores; the correction bias added only to
// choose; with n_group > 1, only the topk_group groups with the highest sum
// of their two best biased scores compete; the chosen experts' unbiased
// scores, normalised to sum 1, times routed_scaling_factor, weigh them.
func (m *Model) route(e *MoE, xn kernels.Mat) routing {
	T, E := xn.Rows, m.Cfg.NRoutedExperts
	logits := m.ws.mat("router_logits", T, E)
	m.K.MatMulT(logits, xn, e.Gate)
	scores := m.ws.mat("router_scores", T, E)
	m.K.Sigmoid(scores.Data[:T*E], logits.Data[:T*E])
	return m.routeScores(scores, e.Bias)
}

// routeScores is route's choice given the router's sigmoid scores (T × E)
// and the correction bias (E).
func (m *Model) routeScores(scores kernels.Mat, bias []float32) routing {
	cfg := m.Cfg
	T, E, k := scores.Rows, scores.Cols, cfg.NumExpertsPerTok
	choice := m.ws.get("router_choice", E)
	groups := max(cfg.NGroup, 1)
	per := E / groups
	gscore := m.ws.get("router_groups", groups)
	gidx := m.ws.int32s("router_gidx", max(cfg.TopKGroup, 1))
	top2 := m.ws.int32s("router_top2", 2)
	keep := m.ws.get("router_keep", groups)
	rt := routing{idx: m.ws.int32s("router_idx", T*k), w: m.ws.get("router_w", T*k)}
	for t := range T {
		s := scores.Row(t)
		for i := range E {
			choice[i] = s[i] + bias[i]
		}
		if groups > 1 {
			for g := range groups {
				m.K.TopK(top2, nil, choice[g*per:(g+1)*per])
				gscore[g] = choice[g*per+int(top2[0])] + choice[g*per+int(top2[1])]
			}
			m.K.TopK(gidx, nil, gscore)
			clear(keep)
			for _, g := range gidx {
				keep[g] = 1
			}
			for g := range groups {
				if keep[g] == 0 {
					// -Inf, not 0: with a negative bias a masked expert could otherwise win.
					for i := g * per; i < (g+1)*per; i++ {
						choice[i] = float32(math.Inf(-1))
					}
				}
			}
		}
		idx := rt.idx[t*k : (t+1)*k]
		m.K.TopK(idx, nil, choice)
		w := rt.w[t*k : (t+1)*k]
		var sum float32
		for i, ex := range idx {
			w[i] = s[ex]
			sum += w[i]
		}
		norm := float32(cfg.RoutedScalingFactor)
		if cfg.NormTopKProb {
			norm /= sum + 1e-20
		}
		for i := range w {
			w[i] *= norm
		}
	}
	return rt
}
