package cudaexec

import (
	"errors"
	"fmt"
	"math"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/kernels"
)

// Executor runs the model's forward pass (and its MTP drafter) as the op
// list over an Ops, for the scheduler: sched.Executor and
// sched.SpecExecutor. The weights and the KV values live in the Ops'
// memory; Pool is the page bookkeeping alone. Each op mirrors a step of
// model.Forward (layer, attention, attendAbsorbed, moe, head) in the same
// order, on the same shapes and views, so that over NewHostOps it computes
// model.Forward's bits. Over a Grapher (the GPU's Ops), UseGraphs makes
// decode batches replay CUDA graphs, with the same bits as launching.
//
// A device failure is fatal: after a failed op (Ops.Err non-nil) Forward
// and Draft panic with an error wrapping it, since the KV pool's state is
// then unknown. Not safe for concurrent use: one goroutine (the
// scheduler's) drives it.
type Executor struct {
	cfg  *model.Config
	ops  Ops
	w    weights
	kv   []KVLayer // per layer: the main ones, then the MTP's
	pool *model.KVCache
	rope Rope
	rc   RouteConfig

	owned []Mem             // the weights' and the pool's allocations
	f32   map[string]Tensor // scratch by name: its allocation (1 × capacity)
	i32   map[string]Ints
	host  map[string][]float32 // the Outputs' host rows, by name

	// The host side of the current batch, kept between calls.
	hb     HostBatch
	tokens []int32
	heads  []int32

	// dummySlot is the first slot of the KV page kept beyond the pool
	// over a Grapher (-1 without): the slot a decode graph's padding rows
	// write.
	dummySlot int32
	gr        *graphs // UseGraphs'; nil: every batch launches directly
}

// weights are the model's parameters in the Ops' memory, as model.Weights
// holds them on the host; vectors are 1 × n tensors.
type weights struct {
	embed  Tensor
	layers []layerW
	norm   Tensor
	lmHead Tensor
	mtp    *mtpW
}

type layerW struct {
	inputNorm, postNorm Tensor
	attn                attnW
	mlp                 *MLP
	moe                 *moeW
}

type attnW struct {
	qaProj, qaNorm, qbProj, kvaProj, kvaNorm, kvbProj, oProj Tensor
	// uk[h] and uv[h] are views of kvbProj: W_UK_h (nope × r) and W_UV_h
	// (v × r), as the model derives them.
	uk, uv []Tensor
	// The indexer's.
	wqB, wk, kNormW, kNormB, weightsProj Tensor
}

type moeW struct {
	gate, bias Tensor
	experts    Experts
	shared     MLP
}

type mtpW struct {
	ehProj, eNorm, hNorm, headNorm Tensor
	layer                          layerW
}

// NewExecutor uploads w into ops and allocates a KV pool of pages·pageSize
// slots for cfg's main layers, and its MTP layer too when mtp is set (the
// checkpoint must then have one). The Executor owns ops from here on: Close
// closes it. On an error it frees what it allocated and leaves ops open:
// the caller still owns it.
func NewExecutor(cfg *model.Config, w *model.Weights, ops Ops, pages, pageSize int, mtp bool) (*Executor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pages <= 0 || pageSize <= 0 {
		return nil, fmt.Errorf("cudaexec: a KV pool of %d pages of %d slots", pages, pageSize)
	}
	if mtp && w.MTP == nil {
		return nil, errors.New("cudaexec: drafting asked for, but the checkpoint has no MTP layer")
	}
	e := &Executor{cfg: cfg, ops: ops, pool: model.NewKVPages(pages, pageSize),
		f32: map[string]Tensor{}, i32: map[string]Ints{}, host: map[string][]float32{},
		rc: RouteConfig{Groups: cfg.NGroup, TopKGroup: cfg.TopKGroup, K: cfg.NumExpertsPerTok,
			Scaling: float32(cfg.RoutedScalingFactor), NormTopK: cfg.NormTopKProb},
	}
	e.w.embed = e.upload(w.Embed)
	for l := range w.Layers {
		e.w.layers = append(e.w.layers, e.uploadLayer(&w.Layers[l]))
	}
	e.w.norm = e.vec(w.Norm)
	e.w.lmHead = e.upload(w.LMHead)
	layers := cfg.NumHiddenLayers
	if mtp {
		m := w.MTP
		e.w.mtp = &mtpW{ehProj: e.upload(m.EHProj), eNorm: e.vec(m.ENorm), hNorm: e.vec(m.HNorm),
			headNorm: e.vec(m.HeadNorm), layer: e.uploadLayer(&m.Layer)}
		layers++
	}
	// Over a Grapher the KV tensors are a page larger than the pool the
	// scheduler sees: a decode graph's padding rows write there.
	slots := pages * pageSize
	e.dummySlot = -1
	if _, ok := ops.(Grapher); ok {
		e.dummySlot = int32(slots)
		slots += pageSize
	}
	r, dr := cfg.KVLoraRank, cfg.QKRopeHeadDim
	for range layers {
		kv := KVLayer{MLA: ops.Alloc(slots, r+dr), Index: ops.Alloc(cfg.IndexHeadDim, slots), Rank: r}
		e.owned = append(e.owned, kv.MLA.Mem, kv.Index.Mem)
		e.kv = append(e.kv, kv)
	}
	e.rope = ops.UploadRope(kernels.NewRope(dr, cfg.MaxPositionEmbeddings, cfg.RopeParameters.RopeTheta))
	if err := ops.Err(); err != nil {
		e.release()
		return nil, fmt.Errorf("cudaexec: uploading the weights to %s: %w", ops.Name(), err)
	}
	return e, nil
}

// upload copies a host matrix into a new tensor.
func (e *Executor) upload(m kernels.Mat) Tensor {
	t := e.ops.Alloc(m.Rows, m.Cols)
	e.owned = append(e.owned, t.Mem)
	e.ops.Upload(t, m)
	return t
}

// vec uploads a vector as a 1 × n tensor.
func (e *Executor) vec(v []float32) Tensor { return e.upload(kernels.NewMat(v, 1, len(v))) }

func (e *Executor) uploadLayer(ly *model.Layer) layerW {
	cfg := e.cfg
	a, ix := &ly.Attn, &ly.Attn.Indexer
	out := layerW{inputNorm: e.vec(ly.InputNorm), postNorm: e.vec(ly.PostNorm)}
	at := &out.attn
	*at = attnW{
		qaProj: e.upload(a.QAProj), qaNorm: e.vec(a.QANorm), qbProj: e.upload(a.QBProj),
		kvaProj: e.upload(a.KVAProj), kvaNorm: e.vec(a.KVANorm), kvbProj: e.upload(a.KVBProj), oProj: e.upload(a.OProj),
		wqB: e.upload(ix.WqB), wk: e.upload(ix.Wk), kNormW: e.vec(ix.KNormW), kNormB: e.vec(ix.KNormB),
		weightsProj: e.upload(ix.WeightsProj),
	}
	dn, dv, r := cfg.QKNopeHeadDim, cfg.VHeadDim, cfg.KVLoraRank
	for h := range cfg.NumAttentionHeads {
		rows := at.kvbProj.Slice(h*(dn+dv), (h+1)*(dn+dv), 0, r)
		at.uk = append(at.uk, rows.Slice(0, dn, 0, r))
		at.uv = append(at.uv, rows.Slice(dn, dn+dv, 0, r))
	}
	if ly.MoE == nil {
		m := ly.MLP
		out.mlp = &MLP{Gate: e.upload(m.Gate), Up: e.upload(m.Up), Down: e.upload(m.Down)}
		return out
	}
	m := ly.MoE
	n, inter, H := len(m.Experts), cfg.MoEIntermediateSize, cfg.HiddenSize
	ex := Experts{Gate: e.ops.Alloc(n*inter, H), Up: e.ops.Alloc(n*inter, H), Down: e.ops.Alloc(n*H, inter), N: n, Inter: inter}
	e.owned = append(e.owned, ex.Gate.Mem, ex.Up.Mem, ex.Down.Mem)
	for i, x := range m.Experts {
		e.ops.Upload(ex.Gate.RowRange(i*inter, (i+1)*inter), x.Gate)
		e.ops.Upload(ex.Up.RowRange(i*inter, (i+1)*inter), x.Up)
		e.ops.Upload(ex.Down.RowRange(i*H, (i+1)*H), x.Down)
	}
	out.moe = &moeW{gate: e.upload(m.Gate), bias: e.vec(m.Bias), experts: ex,
		shared: MLP{Gate: e.upload(m.Shared.Gate), Up: e.upload(m.Shared.Up), Down: e.upload(m.Shared.Down)}}
	return out
}

// Pool implements sched.Executor: the page bookkeeping of the KV pool
// whose values live in the Ops' memory.
func (e *Executor) Pool() *model.KVCache { return e.pool }

// HasDrafter reports whether the Executor can draft: its MTP layer was
// uploaded (NewExecutor's mtp).
func (e *Executor) HasDrafter() bool { return e.w.mtp != nil }

// Forward implements sched.Executor as model.Forward: the batch's rows
// through every layer, then model.norm and lm_head on the rows that want
// logits. The Output's matrices are host memory of the Executor's, valid
// until the next Forward.
//
// With UseGraphs, a decode-only batch (every sequence one new token and
// its last row's logits) of at most the largest bucket replays the CUDA
// graph of its batch-size bucket instead (exec_graph.go), with the same
// results.
func (e *Executor) Forward(seqs []model.Seq) *model.Output {
	if out := e.decodeGraph(seqs); out != nil {
		return out
	}
	b, tokens := e.batch(seqs)
	if b.T == 0 {
		return e.head(Tensor{}, seqs, e.w.norm, "")
	}
	return e.head(e.body(b, tokens), seqs, e.w.norm, "")
}

// body is model.Forward up to the final norm: the embeddings of the
// batch's rows through every layer, in a scratch tensor it returns.
func (e *Executor) body(b Batch, tokens Ints) Tensor {
	x := e.mat("x", b.T, e.cfg.HiddenSize)
	e.ops.Embed(x, e.w.embed, tokens, b.RowPos, false)
	for l := range e.w.layers {
		e.layer(l, &e.w.layers[l], x, b)
		e.check()
	}
	return x
}

// Draft implements sched.SpecExecutor as model.Draft, the MTP layer's
// forward passes on the Ops and the greedy choice on the host.
func (e *Executor) Draft(seqs []model.DraftSeq) [][]int32 {
	if e.w.mtp == nil {
		panic("cudaexec: Draft: the executor has no MTP layer (NewExecutor's mtp)")
	}
	return model.DraftWith(seqs, e.cfg.HiddenSize, e.mtpForward)
}

// mtpForward is model.MTPForward: the MTP layer over seqs, whose rows read
// the hidden states prev (one row per batch row), caching its keys in KV
// layer num_hidden_layers. Its Output is apart from Forward's.
func (e *Executor) mtpForward(seqs []model.Seq, prev kernels.Mat) *model.Output {
	cfg, mtp := e.cfg, e.w.mtp
	H := cfg.HiddenSize
	b, tokens := e.batch(seqs)
	T := b.T
	if prev.Rows != T || prev.Cols != H {
		panic(fmt.Sprintf("cudaexec: MTP forward: %d×%d hidden state for %d tokens of width %d", prev.Rows, prev.Cols, T, H))
	}
	if T == 0 {
		return e.head(Tensor{}, seqs, mtp.headNorm, "mtp_")
	}
	eps := float32(cfg.RMSNormEps)
	in := e.mat("mtp_in", T, 2*H)
	emb := e.mat("mtp_emb", T, H)
	// The embedding is zeroed at position 0, as model.MTPForward does.
	e.ops.Embed(emb, e.w.embed, tokens, b.RowPos, true)
	// eh_proj reads [enorm(embedding) ; hnorm(hidden)], the embedding first.
	e.ops.RMSNorm(in.Slice(0, T, 0, H), emb, mtp.eNorm, eps)
	pv := e.mat("mtp_prev", T, H)
	e.ops.Upload(pv, prev)
	e.ops.RMSNorm(in.Slice(0, T, H, 2*H), pv, mtp.hNorm, eps)
	g := e.mat("mtp_x", T, H)
	e.ops.MatMulT(g, in, mtp.ehProj)
	e.layer(cfg.NumHiddenLayers, &mtp.layer, g, b)
	e.check()
	return e.head(g, seqs, mtp.headNorm, "mtp_")
}

// batch lays out seqs' rows (model.Forward's checks and order) on the host
// and in the Ops' memory; tokens are the rows' token ids.
func (e *Executor) batch(seqs []model.Seq) (b Batch, tokens Ints) {
	h := &e.hb
	h.RowSeq, h.RowPos, h.RowSlot = h.RowSeq[:0], h.RowPos[:0], h.RowSlot[:0]
	h.SeqSlots, h.SeqOff, h.Seqs = h.SeqSlots[:0], h.SeqOff[:0], h.Seqs[:0]
	e.tokens = e.tokens[:0]
	for j, s := range seqs {
		n := s.Pos + len(s.Tokens)
		if len(s.Slots) < n {
			panic(fmt.Sprintf("cudaexec: sequence at %d with %d new tokens has %d slots", s.Pos, len(s.Tokens), len(s.Slots)))
		}
		h.SeqOff = append(h.SeqOff, int32(len(h.SeqSlots)))
		h.SeqSlots = append(h.SeqSlots, s.Slots[:n]...)
		h.Seqs = append(h.Seqs, SeqView{N: len(s.Tokens), Pos: s.Pos, Slots: s.Slots[:n]})
		for i, tok := range s.Tokens {
			p := s.Pos + i
			if p >= e.cfg.MaxPositionEmbeddings {
				panic(fmt.Sprintf("cudaexec: position %d beyond max_position_embeddings %d", p, e.cfg.MaxPositionEmbeddings))
			}
			h.RowSeq, h.RowPos, h.RowSlot = append(h.RowSeq, int32(j)), append(h.RowPos, int32(p)), append(h.RowSlot, s.Slots[p])
			e.tokens = append(e.tokens, tok)
		}
	}
	h.SeqOff = append(h.SeqOff, int32(len(h.SeqSlots)))
	b = Batch{T: len(e.tokens), Host: *h,
		RowSeq: e.upInts("row_seq", h.RowSeq), RowPos: e.upInts("row_pos", h.RowPos), RowSlot: e.upInts("row_slot", h.RowSlot),
		SeqSlots: e.upInts("seq_slots", h.SeqSlots), SeqOff: e.upInts("seq_off", h.SeqOff)}
	return b, e.upInts("tokens", e.tokens)
}

// head is model.head: a final norm (model.norm, or the MTP's
// shared_head.norm) and lm_head on the rows of x that want logits, the
// results downloaded into the host rows named by prefix.
func (e *Executor) head(x Tensor, seqs []model.Seq, norm Tensor, prefix string) *model.Output {
	cfg := e.cfg
	H, V := cfg.HiddenSize, cfg.VocabSize
	out := &model.Output{First: make([]int, len(seqs))}
	e.heads = model.HeadRows(seqs, out.First, e.heads[:0])
	n := len(e.heads)
	out.Hidden, out.Logits = e.hostMat(prefix+"hidden", n, H), e.hostMat(prefix+"logits", n, V)
	if n == 0 {
		return out
	}
	sel := e.mat("head_in", n, H)
	e.ops.GatherRows(sel, x, e.upInts("head_rows", e.heads))
	hidden := e.mat("hidden", n, H)
	e.ops.RMSNorm(hidden, sel, norm, float32(cfg.RMSNormEps))
	logits := e.mat("logits", n, V)
	e.ops.MatMulT(logits, hidden, e.w.lmHead)
	e.ops.Download(out.Hidden, hidden)
	e.ops.Download(out.Logits, logits)
	e.check()
	return out
}

// layer is model.layer: decoder layer ly (KV layer l) in place on x.
func (e *Executor) layer(l int, ly *layerW, x Tensor, b Batch) {
	cfg := e.cfg
	T, H := x.Rows, cfg.HiddenSize
	eps := float32(cfg.RMSNormEps)
	xn := e.mat("xn", T, H)
	e.ops.RMSNorm(xn, x, ly.inputNorm, eps)
	attn := e.mat("attn_out", T, H)
	e.attention(l, &ly.attn, xn, attn, b)
	e.ops.Add(x, x, attn)

	e.ops.RMSNorm(xn, x, ly.postNorm, eps)
	ffn := e.mat("ffn_out", T, H)
	if ly.moe != nil {
		e.moe(ly.moe, xn, ffn)
	} else {
		e.ops.SwiGLU(ffn, xn, *ly.mlp)
	}
	e.ops.Add(x, x, ffn)
}

// attention is model.attention: MLA with DSA.
func (e *Executor) attention(l int, a *attnW, xn, out Tensor, b Batch) {
	cfg, ops := e.cfg, e.ops
	T := xn.Rows
	heads, dn, dr, dv, r := cfg.NumAttentionHeads, cfg.QKNopeHeadDim, cfg.QKRopeHeadDim, cfg.VHeadDim, cfg.KVLoraRank
	dq := cfg.QKHeadDim()
	eps := float32(cfg.RMSNormEps)
	pos := b.RowPos

	// Queries through the q latent: qr = norm(W_qa x), q = W_qb qr, per head [nope | rope].
	qa := e.mat("qa", T, cfg.QLoraRank)
	ops.MatMulT(qa, xn, a.qaProj)
	qr := e.mat("qr", T, cfg.QLoraRank)
	ops.RMSNorm(qr, qa, a.qaNorm, eps)
	q := e.mat("q", T, heads*dq)
	ops.MatMulT(q, qr, a.qbProj)
	for h := range heads {
		ops.RoPE(q.Slice(0, T, h*dq+dn, (h+1)*dq), pos, e.rope)
	}

	// Keys and values through the KV latent: [c | k_rope], c normed, k_rope rotated.
	kva := e.mat("kva", T, r+dr)
	ops.MatMulT(kva, xn, a.kvaProj)
	c := e.mat("c", T, r)
	ops.RMSNorm(c, kva.Slice(0, T, 0, r), a.kvaNorm, eps)
	kpe := kva.Slice(0, T, r, r+dr)
	ops.RoPE(kpe, pos, e.rope)

	// The indexer's query (its rope part first in each head), key and head weights.
	hi, di := cfg.IndexNHeads, cfg.IndexHeadDim
	iq := e.mat("iq", T, hi*di)
	ops.MatMulT(iq, qr, a.wqB)
	for h := range hi {
		ops.RoPE(iq.Slice(0, T, h*di, h*di+dr), pos, e.rope)
	}
	ikRaw := e.mat("ik_raw", T, di)
	ops.MatMulT(ikRaw, xn, a.wk)
	ik := e.mat("ik", T, di)
	ops.LayerNorm(ik, ikRaw, a.kNormW, a.kNormB, model.IndexerNormEps)
	ops.RoPE(ik.Slice(0, T, 0, dr), pos, e.rope)
	iw := e.mat("iw", T, hi)
	ops.MatMulT(iw, xn, a.weightsProj)
	ops.Scale(iw, float32(1/math.Sqrt(float64(hi))/math.Sqrt(float64(di))))

	kv := e.kv[l]
	ops.WriteKV(kv, c, kpe, ik, b.RowSlot)
	topk := cfg.IndexTopK
	sel := Selection{Picked: e.ints("topk", T*topk), Count: e.ints("topk_count", T), TopK: topk}
	ops.SelectKeys(sel, kv, iq, iw, b)

	vo := e.mat("vo", T, heads*dv)
	e.attendAbsorbed(a, q, kv, sel, vo, float32(1/math.Sqrt(float64(dq))))
	ops.MatMulT(out, vo, a.oProj)
}

// attendAbsorbed is model.attendAbsorbed: per head q̃ = q_nope · W_UK_h
// beside q_rope attends over the cached [c | k_rope] with c as values, and
// W_UV_h lifts the latent result.
func (e *Executor) attendAbsorbed(a *attnW, q Tensor, kv KVLayer, sel Selection, vo Tensor, scale float32) {
	cfg, ops := e.cfg, e.ops
	T := q.Rows
	heads, dn, dv, r := cfg.NumAttentionHeads, cfg.QKNopeHeadDim, cfg.VHeadDim, cfg.KVLoraRank
	dq, dk := cfg.QKHeadDim(), kv.MLA.Cols
	qt := e.mat("q_absorbed", T, heads*dk) // per head [q̃ | q_rope]
	o := e.mat("o_latent", T, heads*r)     // per head the latent result
	for h := range heads {
		ops.MatMul(qt.Slice(0, T, h*dk, h*dk+r), q.Slice(0, T, h*dq, h*dq+dn), a.uk[h])
		ops.Copy(qt.Slice(0, T, h*dk+r, (h+1)*dk), q.Slice(0, T, h*dq+dn, (h+1)*dq))
	}
	ops.Attend(o, qt, kv, sel, heads, scale)
	for h := range heads {
		ops.MatMulT(vo.Slice(0, T, h*dv, (h+1)*dv), o.Slice(0, T, h*r, (h+1)*r), a.uv[h])
	}
}

// moe is model.moe: the routed experts and the shared expert, summed in
// the model's fixed order.
func (e *Executor) moe(m *moeW, xn, out Tensor) {
	T, E, k := xn.Rows, m.experts.N, e.rc.K
	logits := e.mat("router_logits", T, E)
	e.ops.MatMulT(logits, xn, m.gate)
	scores := e.mat("router_scores", T, E)
	e.ops.Sigmoid(scores, logits)
	rt := Routing{Idx: e.ints("router_idx", T*k), W: e.mat("router_w", T, k), K: k}
	e.ops.Route(rt, scores, m.bias, e.rc)
	results := e.mat("moe_results", T*k, xn.Cols) // row t·k+i: expert rt.Idx[t·k+i] on row t
	e.ops.Experts(results, xn, m.experts, rt)
	e.ops.SwiGLU(out, xn, m.shared)
	e.ops.Combine(out, results, rt)
}

// check panics if an op failed: the device's state is unknown after it.
func (e *Executor) check() {
	if err := e.ops.Err(); err != nil {
		panic(fmt.Errorf("cudaexec: forward pass on %s failed: %w", e.ops.Name(), err))
	}
}

// mat returns the named rows × cols scratch tensor, growing its allocation
// (by a quarter more than asked, so slowly growing batches settle) when
// short; its contents are whatever the last user left.
func (e *Executor) mat(name string, rows, cols int) Tensor {
	n := rows * cols
	t, ok := e.f32[name]
	if !ok || t.Mem.Len() < n {
		if ok {
			e.ops.Free(t.Mem)
			e.moved()
		}
		t = e.ops.Alloc(1, max(n+n/4, 1))
		e.f32[name] = t
	}
	return Tensor{Mem: t.Mem, Rows: rows, Cols: cols, Stride: cols}
}

// ints is mat for int32s.
func (e *Executor) ints(name string, n int) Ints {
	v, ok := e.i32[name]
	if !ok || v.Len < n {
		if ok {
			e.ops.Free(v.Mem)
			e.moved()
		}
		v = e.ops.AllocInts(max(n+n/4, 1))
		e.i32[name] = v
	}
	return Ints{Mem: v.Mem, Len: n}
}

// upInts uploads src into the named int32 scratch.
func (e *Executor) upInts(name string, src []int32) Ints {
	v := e.ints(name, len(src))
	if len(src) > 0 {
		e.ops.UploadInts(v, src)
	}
	return v
}

// hostMat returns the named rows × cols host matrix, kept between calls.
func (e *Executor) hostMat(name string, rows, cols int) kernels.Mat {
	n := rows * cols
	b := e.host[name]
	if cap(b) < n {
		b = make([]float32, n, n+n/4)
		e.host[name] = b
	}
	return kernels.NewMat(b[:n], rows, cols)
}

// Close frees the executor's memory and closes its Ops.
func (e *Executor) Close() error {
	ops := e.release()
	if ops == nil {
		return nil
	}
	return ops.Close()
}

// release frees every allocation of the executor and returns its Ops (nil
// when released already), which it no longer holds.
func (e *Executor) release() Ops {
	if e.ops == nil {
		return nil
	}
	e.dropGraphs()
	for _, m := range e.owned {
		e.ops.Free(m)
	}
	for _, t := range e.f32 {
		e.ops.Free(t.Mem)
	}
	for _, v := range e.i32 {
		e.ops.Free(v.Mem)
	}
	if e.rope.Cos.Mem != nil {
		e.ops.Free(e.rope.Cos.Mem)
		if e.rope.Sin.Mem != e.rope.Cos.Mem {
			e.ops.Free(e.rope.Sin.Mem)
		}
	}
	ops := e.ops
	e.ops, e.owned, e.f32, e.i32 = nil, nil, nil, nil
	return ops
}
