package cudaexec

import (
	"fmt"

	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/kernels"
)

// hostMem is an allocation of the host Ops: float32s or int32s.
type hostMem struct {
	f    []float32
	i    []int32
	ints bool
}

// Len implements Mem.
func (m *hostMem) Len() int {
	if m.ints {
		return len(m.i)
	}
	return len(m.f)
}

// hostOps runs each op on the host: a Tensor is a kernels.Mat view of a
// hostMem, and each op is the CPU kernel's or the model's own code
// (model.Steps), so that the Executor over it computes model.Forward's bits.
type hostOps struct {
	k     kernels.Backend
	steps *model.Steps
	live  map[*hostMem]struct{} // every allocation not yet freed, for Close

	work    []float32    // SwiGLU's scratch
	weights []float32    // Combine's, when a Routing's W is strided
	zeros   []int32      // the Tokens of SelectKeys' sequences (only counted)
	seqs    []model.Seq  // SelectKeys' sequences
	rows    [][]int32    // Attend's selected slots per row
	experts []model.MLP  // Experts' views of the stacked experts
	route   model.Config // Route's settings, in the model's names
}

// NewHostOps returns the Ops that run on the host over the CPU kernels k,
// matching model.Forward bit for bit.
func NewHostOps(k kernels.Backend) Ops {
	return &hostOps{k: k, steps: model.NewSteps(k), live: map[*hostMem]struct{}{}}
}

func (o *hostOps) Name() string { return "host " + o.k.Name() }

func (o *hostOps) Alloc(rows, cols int) Tensor {
	if rows < 0 || cols < 0 {
		panic(fmt.Sprintf("cudaexec: Alloc(%d, %d)", rows, cols))
	}
	m := &hostMem{f: make([]float32, rows*cols)}
	o.live[m] = struct{}{}
	return Tensor{Mem: m, Rows: rows, Cols: cols, Stride: cols}
}

func (o *hostOps) AllocInts(n int) Ints {
	if n < 0 {
		panic(fmt.Sprintf("cudaexec: AllocInts(%d)", n))
	}
	m := &hostMem{i: make([]int32, n), ints: true}
	o.live[m] = struct{}{}
	return Ints{Mem: m, Len: n}
}

func (o *hostOps) Free(m Mem) {
	h := m.(*hostMem)
	if _, ok := o.live[h]; !ok {
		panic("cudaexec: Free of an allocation that is not live")
	}
	delete(o.live, h)
	h.f, h.i = nil, nil // a later use panics
}

func (o *hostOps) Upload(dst Tensor, src kernels.Mat) {
	shape("Upload", dst, src.Rows, src.Cols)
	d := o.mat(dst)
	for i := range src.Rows {
		copy(d.Row(i), src.Row(i))
	}
}

func (o *hostOps) UploadInts(dst Ints, src []int32) {
	checkI("UploadInts", dst, len(src))
	copy(hostInts(dst), src)
}

func (o *hostOps) UploadRope(r *kernels.Rope) Rope { return uploadRope(o, r) }

func (o *hostOps) Download(dst kernels.Mat, src Tensor) {
	shape("Download", src, dst.Rows, dst.Cols)
	s := o.mat(src)
	for i := range dst.Rows {
		copy(dst.Row(i), s.Row(i))
	}
}

func (o *hostOps) DownloadInts(dst []int32, src Ints) {
	checkI("DownloadInts", src, len(dst))
	copy(dst, hostInts(src))
}

// Err is always nil: a host failure is a panic.
func (o *hostOps) Err() error { return nil }

func (o *hostOps) Close() error {
	for m := range o.live {
		o.Free(m)
	}
	return nil
}

func (o *hostOps) Embed(dst, table Tensor, tokens, pos Ints, zeroAtPos0 bool) {
	checkI("Embed tokens", tokens, dst.Rows)
	checkI("Embed positions", pos, dst.Rows)
	if dst.Cols != table.Cols {
		panic(fmt.Sprintf("cudaexec: Embed: %d-wide rows of a %d-wide table", dst.Cols, table.Cols))
	}
	d, tb, tok, p := o.mat(dst), o.mat(table), hostInts(tokens), hostInts(pos)
	for t := range dst.Rows {
		if zeroAtPos0 && p[t] == 0 {
			clear(d.Row(t))
		} else {
			copy(d.Row(t), tb.Row(int(tok[t])))
		}
	}
}

func (o *hostOps) MatMulT(dst, x, w Tensor) { o.k.MatMulT(o.mat(dst), o.mat(x), o.mat(w)) }
func (o *hostOps) MatMul(dst, x, w Tensor)  { o.k.MatMul(o.mat(dst), o.mat(x), o.mat(w)) }

func (o *hostOps) RMSNorm(dst, x, w Tensor, eps float32) {
	o.k.RMSNorm(o.mat(dst), o.mat(x), o.vec(w, x.Cols), eps)
}

func (o *hostOps) LayerNorm(dst, x, w, b Tensor, eps float32) {
	o.k.LayerNorm(o.mat(dst), o.mat(x), o.vec(w, x.Cols), o.vec(b, x.Cols), eps)
}

func (o *hostOps) RoPE(x Tensor, pos Ints, r Rope) { o.k.RoPE(o.mat(x), hostInts(pos), r.Ref) }

// Scale multiplies in plain Go, as the model scales the indexer's weights.
func (o *hostOps) Scale(x Tensor, alpha float32) {
	o.rowwise(x, func(row []float32) {
		for i := range row {
			row[i] *= alpha
		}
	})
}

func (o *hostOps) Add(dst, a, b Tensor) {
	shape("Add", a, dst.Rows, dst.Cols)
	shape("Add", b, dst.Rows, dst.Cols)
	if d, x, y, ok := o.flat(dst, a, b); ok { // the model adds whole buffers
		o.k.Add(d, x, y)
		return
	}
	dm, am, bm := o.mat(dst), o.mat(a), o.mat(b)
	for i := range dst.Rows {
		o.k.Add(dm.Row(i), am.Row(i), bm.Row(i))
	}
}

func (o *hostOps) Copy(dst, src Tensor) {
	shape("Copy", src, dst.Rows, dst.Cols)
	d, s := o.mat(dst), o.mat(src)
	for i := range dst.Rows {
		copy(d.Row(i), s.Row(i))
	}
}

func (o *hostOps) GatherRows(dst, src Tensor, rows Ints) {
	checkI("GatherRows", rows, dst.Rows)
	if dst.Cols != src.Cols {
		panic(fmt.Sprintf("cudaexec: GatherRows: %d-wide rows of a %d-wide tensor", dst.Cols, src.Cols))
	}
	d, s := o.mat(dst), o.mat(src)
	for i, r := range hostInts(rows) {
		copy(d.Row(i), s.Row(int(r)))
	}
}

func (o *hostOps) WriteKV(kv KVLayer, c, kpe, ik Tensor, slots Ints) {
	T := c.Rows
	if kpe.Rows != T || ik.Rows != T || slots.Len != T || c.Cols != kv.Rank ||
		kpe.Cols != kv.MLA.Cols-kv.Rank || ik.Cols != kv.Index.Rows {
		panic(fmt.Sprintf("cudaexec: WriteKV: c %d×%d, kpe %d×%d, ik %d×%d, %d slots into a pool of [%d | %d] and %d",
			c.Rows, c.Cols, kpe.Rows, kpe.Cols, ik.Rows, ik.Cols, slots.Len, kv.Rank, kv.MLA.Cols-kv.Rank, kv.Index.Rows))
	}
	mla, idx := o.mat(kv.MLA), o.mat(kv.Index)
	cm, km, im := o.mat(c), o.mat(kpe), o.mat(ik)
	for t, s := range hostInts(slots) {
		row := mla.Row(int(s))
		copy(row[:kv.Rank], cm.Row(t))
		copy(row[kv.Rank:], km.Row(t))
		for d, v := range im.Row(t) {
			idx.Row(d)[s] = v
		}
	}
}

func (o *hostOps) SelectKeys(sel Selection, kv KVLayer, iq, iw Tensor, b Batch) {
	T := iq.Rows
	if iw.Rows != T || b.T != T || sel.Picked.Len < T*sel.TopK || sel.Count.Len < T {
		panic(fmt.Sprintf("cudaexec: SelectKeys: iq %d rows, iw %d, batch %d, %d picked and %d counts for top %d",
			T, iw.Rows, b.T, sel.Picked.Len, sel.Count.Len, sel.TopK))
	}
	o.seqs = o.seqs[:0]
	for _, s := range b.Host.Seqs {
		for len(o.zeros) < s.N {
			o.zeros = append(o.zeros, 0)
		}
		o.seqs = append(o.seqs, model.Seq{Tokens: o.zeros[:s.N], Pos: s.Pos, Slots: s.Slots})
	}
	rows := o.steps.SelectKeys(o.mat(kv.Index), o.mat(iq), o.mat(iw), o.seqs, sel.TopK)
	picked, count := hostInts(sel.Picked), hostInts(sel.Count)
	for t, r := range rows {
		copy(picked[t*sel.TopK:(t+1)*sel.TopK], r)
		count[t] = int32(len(r))
	}
}

func (o *hostOps) Attend(out, qt Tensor, kv KVLayer, sel Selection, heads int, scale float32) {
	T := qt.Rows
	picked, count := hostInts(sel.Picked), hostInts(sel.Count)
	o.rows = o.rows[:0]
	for t := range T {
		o.rows = append(o.rows, picked[t*sel.TopK:t*sel.TopK+int(count[t])])
	}
	keys := o.mat(kv.MLA)
	o.steps.Attend(o.mat(out), o.mat(qt), keys, keys.Slice(0, keys.Rows, 0, kv.Rank), o.rows, heads, scale)
}

func (o *hostOps) SwiGLU(dst, x Tensor, mlp MLP) {
	o.work = grow(o.work, 2*x.Rows*mlp.Gate.Rows)
	o.k.SwiGLU(o.mat(dst), o.mat(x), o.mat(mlp.Gate), o.mat(mlp.Up), o.mat(mlp.Down), o.work)
}

func (o *hostOps) Sigmoid(dst, x Tensor) {
	shape("Sigmoid", x, dst.Rows, dst.Cols)
	if d, s, _, ok := o.flat(dst, x, x); ok { // the model's whole buffer
		o.k.Sigmoid(d, s)
		return
	}
	dm, xm := o.mat(dst), o.mat(x)
	for i := range dst.Rows {
		o.k.Sigmoid(dm.Row(i), xm.Row(i))
	}
}

func (o *hostOps) Route(r Routing, scores, bias Tensor, rc RouteConfig) {
	T := scores.Rows
	if r.K != rc.K || r.Idx.Len != T*r.K || r.W.Rows != T || r.W.Cols != r.K {
		panic(fmt.Sprintf("cudaexec: Route: %d rows into %d indices and a %d×%d weight tensor, k %d and %d",
			T, r.Idx.Len, r.W.Rows, r.W.Cols, r.K, rc.K))
	}
	o.route = model.Config{NumExpertsPerTok: rc.K, NGroup: rc.Groups, TopKGroup: rc.TopKGroup,
		RoutedScalingFactor: float64(rc.Scaling), NormTopKProb: rc.NormTopK}
	idx, w := o.steps.Route(o.mat(scores), o.vec(bias, scores.Cols), &o.route)
	copy(hostInts(r.Idx), idx)
	wm := o.mat(r.W)
	for t := range T {
		copy(wm.Row(t), w[t*r.K:(t+1)*r.K])
	}
}

func (o *hostOps) Experts(results, xn Tensor, ex Experts, r Routing) {
	if results.Rows != xn.Rows*r.K || r.Idx.Len != xn.Rows*r.K {
		panic(fmt.Sprintf("cudaexec: Experts: %d results for %d rows of %d experts each", results.Rows, xn.Rows, r.K))
	}
	H := xn.Cols
	gate, up, down := o.mat(ex.Gate), o.mat(ex.Up), o.mat(ex.Down)
	o.experts = o.experts[:0]
	for e := range ex.N {
		o.experts = append(o.experts, model.MLP{
			Gate: gate.Slice(e*ex.Inter, (e+1)*ex.Inter, 0, H),
			Up:   up.Slice(e*ex.Inter, (e+1)*ex.Inter, 0, H),
			Down: down.Slice(e*H, (e+1)*H, 0, ex.Inter),
		})
	}
	o.steps.Experts(o.mat(results), o.mat(xn), hostInts(r.Idx), r.K, o.experts)
}

func (o *hostOps) Combine(out, results Tensor, r Routing) {
	T := out.Rows
	if results.Rows != T*r.K || r.W.Rows != T || r.W.Cols != r.K {
		panic(fmt.Sprintf("cudaexec: Combine: %d rows, %d results, %d×%d weights for k %d", T, results.Rows, r.W.Rows, r.W.Cols, r.K))
	}
	o.weights = grow(o.weights, T*r.K)
	wm := o.mat(r.W)
	for t := range T {
		copy(o.weights[t*r.K:(t+1)*r.K], wm.Row(t))
	}
	o.steps.Combine(o.mat(out), o.mat(results), o.weights, r.K)
}

// mat views t as a kernels.Mat.
func (o *hostOps) mat(t Tensor) kernels.Mat {
	f := t.Mem.(*hostMem).f
	if t.Rows == 0 || t.Cols == 0 {
		return kernels.Mat{Rows: t.Rows, Cols: t.Cols, Stride: t.Stride}
	}
	return kernels.Mat{Data: f[t.Off : t.Off+(t.Rows-1)*t.Stride+t.Cols], Rows: t.Rows, Cols: t.Cols, Stride: t.Stride}
}

// vec returns the n elements of a 1 × n tensor (a norm's weight, a bias).
func (o *hostOps) vec(t Tensor, n int) []float32 {
	shape("a weight vector", t, 1, n)
	return o.mat(t).Row(0)
}

// flat returns three tensors of one shape as whole buffers when all three
// are dense, so that an elementwise kernel runs over them as the model
// runs it over its buffers.
func (o *hostOps) flat(a, b, c Tensor) (x, y, z []float32, ok bool) {
	if a.Stride != a.Cols || b.Stride != b.Cols || c.Stride != c.Cols {
		return nil, nil, nil, false
	}
	n := a.Rows * a.Cols
	buf := func(t Tensor) []float32 { return t.Mem.(*hostMem).f[t.Off : t.Off+n] }
	return buf(a), buf(b), buf(c), true
}

// rowwise calls fn on each row of t, or once on the whole buffer when t is dense.
func (o *hostOps) rowwise(t Tensor, fn func(row []float32)) {
	if x, _, _, ok := o.flat(t, t, t); ok {
		fn(x)
		return
	}
	m := o.mat(t)
	for i := range t.Rows {
		fn(m.Row(i))
	}
}

// hostInts returns v's elements.
func hostInts(v Ints) []int32 { return v.Mem.(*hostMem).i[v.Off : v.Off+v.Len] }

// grow returns b with at least n elements, reallocated when short.
func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n, n+n/4)
	}
	return b[:n]
}
