package cudaexec

import (
	"fmt"

	"github.com/glmbench/glmbench/kernels"
)

// NewLaunchOps returns the Ops that run kernels.cu through c over mem: the
// GPU's (OpenDevice) and the emulator's (engine/cudaexec/emu). Every op is
// one or more kernel launches, queued in order on c; the shapes are
// checked here (a mismatch panics), the errors are mem's (sticky). Name is
// mem's.
//
// Over a Caller that records graphs (the GPU device's) the Ops is also a
// Grapher.
func NewLaunchOps(mem Memory, c Caller) Ops {
	o := &launchOps{mem: mem, c: c}
	if gc, ok := c.(graphCaller); ok {
		return &graphOps{launchOps: o, gc: gc}
	}
	return o
}

// launchOps is NewLaunchOps' Ops. The scratch buffers are kept between
// calls and grown when a call needs more.
type launchOps struct {
	mem Memory
	c   Caller

	scratchSet             // in use: the direct launches' or, in graph mode, the graphs'
	direct      scratchSet // the other set (graphOps.GraphScratch swaps them)
	inGraph     bool       // scratchSet is the graphs'
	graphMoves  int        // reallocations of the graphs' set
	scoreStride int        // the last SelectKeys' scores stride (for tests)
	allocs      map[Mem]bool
}

// scratchSet is launchOps' own scratch.
type scratchSet struct {
	scores Mem // SelectKeys' indexer scores, T × visible (stride: the visible count)
	gate   Mem // SwiGLU's and Experts' intermediates
	up     Mem
}

// threads is the block size of every kernel but route's.
const threads = 256

// gemmTile is the wide GEMM kernels' tile (gemm_wide in kernels.cu);
// skinnyRows × skinnyCols the skinny ones' (SKINNY_BM, SKINNY_BN), used up
// to maxSkinnyRows rows of x. Both give the same bits.
const (
	gemmTile      = 128
	skinnyRows    = 16
	skinnyCols    = 64
	maxSkinnyRows = 64
)

// attendMaxSel and attendMaxDK are kernels.cu's ATTEND_MAX_SEL and
// ATTEND_MAX_DK; routeMaxExperts and routeMaxGroups its router bounds.
const (
	attendMaxSel    = 4096
	attendMaxDK     = 1024
	routeMaxExperts = 1024
	routeMaxGroups  = 64
)

func (o *launchOps) Name() string { return o.mem.Name() }
func (o *launchOps) Err() error   { return o.mem.Err() }

func (o *launchOps) alloc(n int, kind ElemKind) Mem {
	m := o.mem.Alloc(n, kind)
	if o.allocs == nil {
		o.allocs = map[Mem]bool{}
	}
	if m != nil {
		o.allocs[m] = true
	}
	return m
}

func (o *launchOps) Alloc(rows, cols int) Tensor {
	if rows < 0 || cols < 0 {
		panic(fmt.Sprintf("cudaexec: Alloc(%d, %d)", rows, cols))
	}
	return Tensor{Mem: o.alloc(rows*cols, F32), Rows: rows, Cols: cols, Stride: cols}
}

func (o *launchOps) AllocInts(n int) Ints {
	if n < 0 {
		panic(fmt.Sprintf("cudaexec: AllocInts(%d)", n))
	}
	return Ints{Mem: o.alloc(n, I32), Len: n}
}

func (o *launchOps) Free(m Mem) {
	if m == nil {
		return
	}
	delete(o.allocs, m)
	o.mem.Free(m)
}

// span is how many elements of its allocation t covers from t.Off.
func span(t Tensor) int {
	if t.Rows == 0 || t.Cols == 0 {
		return 0
	}
	return (t.Rows-1)*t.Stride + t.Cols
}

// checkT panics unless t lies inside its allocation.
func checkT(op string, t Tensor) {
	if t.Rows < 0 || t.Cols < 0 || t.Stride < t.Cols || t.Off < 0 {
		panic(fmt.Sprintf("cudaexec: %s: bad tensor %d×%d, stride %d, offset %d", op, t.Rows, t.Cols, t.Stride, t.Off))
	}
	if n := span(t); n > 0 && (t.Mem == nil || t.Off+n > t.Mem.Len()) {
		panic(fmt.Sprintf("cudaexec: %s: %d×%d tensor (stride %d) at %d outside its allocation", op, t.Rows, t.Cols, t.Stride, t.Off))
	}
}

// checkI panics unless v lies inside its allocation and holds n ints.
func checkI(op string, v Ints, n int) {
	if v.Len != n || v.Off < 0 || (n > 0 && (v.Mem == nil || v.Off+n > v.Mem.Len())) {
		panic(fmt.Sprintf("cudaexec: %s: %d ints at %d, want %d inside the allocation", op, v.Len, v.Off, n))
	}
}

func shape(op string, t Tensor, rows, cols int) {
	checkT(op, t)
	if t.Rows != rows || t.Cols != cols {
		panic(fmt.Sprintf("cudaexec: %s: %d×%d tensor, want %d×%d", op, t.Rows, t.Cols, rows, cols))
	}
}

func (o *launchOps) Upload(dst Tensor, src kernels.Mat) {
	shape("Upload", dst, src.Rows, src.Cols)
	if dst.Rows == 0 || dst.Cols == 0 {
		return
	}
	if dst.Stride == dst.Cols && src.Stride == src.Cols {
		o.mem.UploadF32(dst.Mem, dst.Off, src.Data[:dst.Rows*dst.Cols])
		return
	}
	for r := range dst.Rows {
		o.mem.UploadF32(dst.Mem, dst.Off+r*dst.Stride, src.Row(r))
	}
}

func (o *launchOps) UploadInts(dst Ints, src []int32) {
	checkI("UploadInts", dst, len(src))
	if len(src) > 0 {
		o.mem.UploadI32(dst.Mem, dst.Off, src)
	}
}

func (o *launchOps) UploadRope(r *kernels.Rope) Rope { return uploadRope(o, r) }

func (o *launchOps) Download(dst kernels.Mat, src Tensor) {
	shape("Download", src, dst.Rows, dst.Cols)
	n := span(src)
	if n == 0 {
		return
	}
	if src.Stride == src.Cols && dst.Stride == dst.Cols {
		o.mem.DownloadF32(dst.Data[:n], src.Mem, src.Off)
		return
	}
	buf := make([]float32, n)
	o.mem.DownloadF32(buf, src.Mem, src.Off)
	for r := range src.Rows {
		copy(dst.Row(r), buf[r*src.Stride:r*src.Stride+src.Cols])
	}
}

func (o *launchOps) DownloadInts(dst []int32, src Ints) {
	checkI("DownloadInts", src, len(dst))
	if len(dst) > 0 {
		o.mem.DownloadI32(dst, src.Mem, src.Off)
	}
}

func (o *launchOps) Close() error {
	for m := range o.allocs {
		o.mem.Free(m)
	}
	o.allocs = nil
	o.scratchSet, o.direct = scratchSet{}, scratchSet{}
	err := o.mem.Err()
	if cerr := o.mem.Close(); err == nil {
		err = cerr
	}
	return err
}

// launch checks args against the kernel's signature and queues it; a grid
// with no blocks launches nothing.
func (o *launchOps) launch(kernel string, grid, block Dim3, args ...Arg) {
	checkLaunch(kernel, args)
	if grid.X <= 0 || grid.Y <= 0 || grid.Z <= 0 || o.mem.Err() != nil {
		return
	}
	o.c.Call(kernel, grid, block, 0, args...)
}

func rows(n int) Dim3   { return Dim3{X: n, Y: 1, Z: 1} }
func block(n int) Dim3  { return Dim3{X: n, Y: 1, Z: 1} }
func cdiv(a, b int) int { return (a + b - 1) / b }
func tp(t Tensor) Arg   { return Ptr(t.Mem, t.Off) }
func ip(v Ints) Arg     { return Ptr(v.Mem, v.Off) }
func st(t Tensor) Arg   { return Int(t.Stride) }
func boolArg(b bool) Arg {
	if b {
		return Int(1)
	}
	return Int(0)
}

// scratch returns *m grown to hold n elements of kind.
func (o *launchOps) scratch(m *Mem, n int, kind ElemKind) Mem {
	if *m == nil || (*m).Len() < n {
		if *m != nil {
			o.Free(*m)
		}
		if o.inGraph {
			o.graphMoves++
		}
		*m = o.alloc(max(n, 1), kind)
	}
	return *m
}

func (o *launchOps) Embed(dst, table Tensor, tokens, pos Ints, zeroAtPos0 bool) {
	T, H := dst.Rows, dst.Cols
	shape("Embed", dst, T, H)
	shape("Embed", table, table.Rows, H)
	checkI("Embed", tokens, T)
	checkI("Embed", pos, T)
	if T == 0 {
		return
	}
	o.launch("embed", rows(T), block(threads), tp(dst), st(dst), tp(table), st(table), Int(table.Rows),
		ip(tokens), ip(pos), Int(T), Int(H), boolArg(zeroAtPos0))
}

func (o *launchOps) gemm(kernel string, dst, x, w Tensor, n, k int) {
	M := x.Rows
	shape(kernel, dst, M, n)
	if M == 0 || n == 0 {
		return
	}
	grid := Dim3{X: cdiv(n, gemmTile), Y: cdiv(M, gemmTile), Z: 1}
	if M <= maxSkinnyRows {
		kernel += "_skinny"
		grid = Dim3{X: cdiv(n, skinnyCols), Y: cdiv(M, skinnyRows), Z: 1}
	}
	o.launch(kernel, grid, block(threads),
		tp(dst), st(dst), tp(x), st(x), tp(w), st(w), Int(M), Int(n), Int(k))
}

func (o *launchOps) MatMulT(dst, x, w Tensor) {
	checkT("MatMulT", x)
	shape("MatMulT", w, w.Rows, x.Cols)
	o.gemm("matmul_t", dst, x, w, w.Rows, x.Cols)
}

func (o *launchOps) MatMul(dst, x, w Tensor) {
	checkT("MatMul", x)
	shape("MatMul", w, x.Cols, w.Cols)
	o.gemm("matmul", dst, x, w, w.Cols, x.Cols)
}

func (o *launchOps) RMSNorm(dst, x, w Tensor, eps float32) {
	checkT("RMSNorm", x)
	shape("RMSNorm", dst, x.Rows, x.Cols)
	shape("RMSNorm", w, 1, x.Cols)
	o.launch("rmsnorm", rows(x.Rows), block(threads), tp(dst), st(dst), tp(x), st(x), tp(w),
		Int(x.Rows), Int(x.Cols), Float(eps))
}

func (o *launchOps) LayerNorm(dst, x, w, b Tensor, eps float32) {
	checkT("LayerNorm", x)
	shape("LayerNorm", dst, x.Rows, x.Cols)
	shape("LayerNorm", w, 1, x.Cols)
	shape("LayerNorm", b, 1, x.Cols)
	o.launch("layernorm", rows(x.Rows), block(threads), tp(dst), st(dst), tp(x), st(x), tp(w), tp(b),
		Int(x.Rows), Int(x.Cols), Float(eps))
}

func (o *launchOps) RoPE(x Tensor, pos Ints, r Rope) {
	checkT("RoPE", x)
	checkI("RoPE", pos, x.Rows)
	half := r.Ref.Dim / 2
	if x.Cols != r.Ref.Dim {
		panic(fmt.Sprintf("cudaexec: RoPE: %d columns, rope dim %d", x.Cols, r.Ref.Dim))
	}
	shape("RoPE", r.Cos, r.Ref.MaxPos, half)
	shape("RoPE", r.Sin, r.Ref.MaxPos, half)
	if r.Cos.Stride != half || r.Sin.Stride != half {
		panic("cudaexec: RoPE: the tables must be dense")
	}
	o.launch("rope", rows(x.Rows), block(128), tp(x), st(x), ip(pos), tp(r.Cos), tp(r.Sin),
		Int(x.Rows), Int(half), Int(r.Ref.MaxPos))
}

func (o *launchOps) Scale(x Tensor, alpha float32) {
	checkT("Scale", x)
	o.launch("scale", rows(x.Rows), block(threads), tp(x), st(x), Int(x.Rows), Int(x.Cols), Float(alpha))
}

func (o *launchOps) Add(dst, a, b Tensor) {
	checkT("Add", a)
	shape("Add", dst, a.Rows, a.Cols)
	shape("Add", b, a.Rows, a.Cols)
	o.launch("add", rows(a.Rows), block(threads), tp(dst), st(dst), tp(a), st(a), tp(b), st(b),
		Int(a.Rows), Int(a.Cols))
}

func (o *launchOps) Copy(dst, src Tensor) {
	checkT("Copy", src)
	shape("Copy", dst, src.Rows, src.Cols)
	o.launch("copy", rows(src.Rows), block(threads), tp(dst), st(dst), tp(src), st(src), Int(src.Rows), Int(src.Cols))
}

func (o *launchOps) GatherRows(dst, src Tensor, rws Ints) {
	checkT("GatherRows", src)
	shape("GatherRows", dst, rws.Len, src.Cols)
	checkI("GatherRows", rws, dst.Rows)
	o.launch("gather_rows", rows(dst.Rows), block(threads), tp(dst), st(dst), tp(src), st(src), Int(src.Rows),
		ip(rws), Int(dst.Rows), Int(dst.Cols))
}

func (o *launchOps) WriteKV(kv KVLayer, c, kpe, ik Tensor, slots Ints) {
	T := c.Rows
	checkT("WriteKV", kv.MLA)
	checkT("WriteKV", kv.Index)
	shape("WriteKV", c, T, kv.Rank)
	shape("WriteKV", kpe, T, kv.MLA.Cols-kv.Rank)
	shape("WriteKV", ik, T, kv.Index.Rows)
	checkI("WriteKV", slots, T)
	if kv.Index.Cols != kv.MLA.Rows {
		panic(fmt.Sprintf("cudaexec: WriteKV: %d MLA slots, %d index slots", kv.MLA.Rows, kv.Index.Cols))
	}
	o.launch("write_kv", rows(T), block(threads), tp(kv.MLA), st(kv.MLA), tp(kv.Index), st(kv.Index),
		Int(kv.MLA.Rows), tp(c), st(c), tp(kpe), st(kpe), tp(ik), st(ik), ip(slots), Int(T),
		Int(kv.Rank), Int(kv.MLA.Cols-kv.Rank), Int(kv.Index.Rows))
}

// visible returns the most keys any row of b sees (its position + 1).
func (o *launchOps) visible(b Batch) int {
	pos := b.Host.RowPos
	if pos == nil {
		pos = make([]int32, b.T)
		o.DownloadInts(pos, b.RowPos)
	}
	n := 0
	for _, p := range pos {
		n = max(n, int(p)+1)
	}
	return n
}

func (o *launchOps) SelectKeys(sel Selection, kv KVLayer, iq, iw Tensor, b Batch) {
	T := b.T
	heads := iw.Cols
	checkT("SelectKeys", iq)
	shape("SelectKeys", iw, T, heads)
	if heads == 0 || iq.Cols%heads != 0 || iq.Rows != T {
		panic(fmt.Sprintf("cudaexec: SelectKeys: iq %d×%d for %d rows of %d heads", iq.Rows, iq.Cols, T, heads))
	}
	dim := iq.Cols / heads
	shape("SelectKeys", kv.Index, dim, kv.Index.Cols)
	checkI("SelectKeys", sel.Picked, T*sel.TopK)
	checkI("SelectKeys", sel.Count, T)
	for _, v := range []Ints{b.RowSeq, b.RowPos} {
		checkI("SelectKeys", v, T)
	}
	checkI("SelectKeys", b.SeqSlots, b.SeqSlots.Len)
	checkI("SelectKeys", b.SeqOff, b.SeqOff.Len)
	if T == 0 || sel.TopK <= 0 {
		return
	}
	// A graph's batch fixes the scores' width (and index_scores' grid) at
	// the most keys a row may see, whatever the rows see now: the kernels
	// skip the keys past a row's position.
	vis := b.MaxVisible
	if vis <= 0 {
		vis = o.visible(b)
	}
	ss := max(vis, 1)
	o.scoreStride = ss
	scores := o.scratch(&o.scores, T*ss, F32)
	if vis > sel.TopK {
		o.launch("index_scores", Dim3{X: cdiv(vis, threads), Y: T, Z: 1}, block(threads),
			Ptr(scores, 0), Int(ss), tp(iq), st(iq), tp(iw), st(iw), tp(kv.Index), st(kv.Index),
			Int(kv.Index.Cols), ip(b.SeqSlots), Int(b.SeqSlots.Len), ip(b.SeqOff), ip(b.RowSeq), ip(b.RowPos),
			Int(T), Int(heads), Int(dim), Int(sel.TopK))
	}
	o.launch("topk_select", rows(T), block(threads), ip(sel.Picked), ip(sel.Count), Ptr(scores, 0),
		Int(ss), ip(b.SeqSlots), Int(b.SeqSlots.Len), ip(b.SeqOff), ip(b.RowSeq), ip(b.RowPos),
		Int(kv.Index.Cols), Int(T), Int(sel.TopK))
}

func (o *launchOps) Attend(out, qt Tensor, kv KVLayer, sel Selection, heads int, scale float32) {
	T, dk, r := qt.Rows, kv.MLA.Cols, kv.Rank
	checkT("Attend", kv.MLA)
	shape("Attend", qt, T, heads*dk)
	shape("Attend", out, T, heads*r)
	checkI("Attend", sel.Picked, T*sel.TopK)
	checkI("Attend", sel.Count, T)
	if sel.TopK > attendMaxSel || dk > attendMaxDK {
		panic(fmt.Sprintf("cudaexec: Attend: top-k %d (most %d), key width %d (most %d)", sel.TopK, attendMaxSel, dk, attendMaxDK))
	}
	if heads == 0 {
		return
	}
	o.launch("attend", Dim3{X: heads, Y: T, Z: 1}, block(threads), tp(out), st(out), tp(qt), st(qt),
		tp(kv.MLA), st(kv.MLA), Int(kv.MLA.Rows), ip(sel.Picked), ip(sel.Count), Int(sel.TopK), Int(T),
		Int(heads), Int(dk), Int(r), Float(scale))
}

// siluMul launches silu_mul: dst = silu(g) ⊙ u.
func (o *launchOps) siluMul(dst, g, u Tensor) {
	o.launch("silu_mul", rows(g.Rows), block(threads), tp(dst), st(dst), tp(g), st(g), tp(u), st(u),
		Int(g.Rows), Int(g.Cols))
}

func (o *launchOps) SwiGLU(dst, x Tensor, mlp MLP) {
	T, I := x.Rows, mlp.Gate.Rows
	checkT("SwiGLU", x)
	shape("SwiGLU", mlp.Gate, I, x.Cols)
	shape("SwiGLU", mlp.Up, I, x.Cols)
	shape("SwiGLU", mlp.Down, x.Cols, I)
	shape("SwiGLU", dst, T, x.Cols)
	g := Tensor{Mem: o.scratch(&o.gate, T*I, F32), Rows: T, Cols: I, Stride: I}
	u := Tensor{Mem: o.scratch(&o.up, T*I, F32), Rows: T, Cols: I, Stride: I}
	o.MatMulT(g, x, mlp.Gate)
	o.MatMulT(u, x, mlp.Up)
	o.siluMul(g, g, u)
	o.MatMulT(dst, g, mlp.Down)
}

func (o *launchOps) Sigmoid(dst, x Tensor) {
	checkT("Sigmoid", x)
	shape("Sigmoid", dst, x.Rows, x.Cols)
	o.launch("sigmoid", rows(x.Rows), block(threads), tp(dst), st(dst), tp(x), st(x), Int(x.Rows), Int(x.Cols))
}

func (o *launchOps) Route(r Routing, scores, bias Tensor, rc RouteConfig) {
	T, N := scores.Rows, scores.Cols
	checkT("Route", scores)
	shape("Route", bias, 1, N)
	shape("Route", r.W, T, r.K)
	checkI("Route", r.Idx, T*r.K)
	groups := max(rc.Groups, 1)
	if rc.K != r.K || r.K > N || N > routeMaxExperts || groups > routeMaxGroups || N%groups != 0 ||
		(groups > 1 && N/groups < 2) {
		panic(fmt.Sprintf("cudaexec: Route: %d experts in %d groups, k = %d (routing k %d)", N, groups, rc.K, r.K))
	}
	o.launch("route", rows(cdiv(T, 64)), block(64), ip(r.Idx), tp(r.W), st(r.W), tp(scores), st(scores), tp(bias),
		Int(T), Int(N), Int(groups), Int(rc.TopKGroup), Int(r.K), Float(rc.Scaling), boolArg(rc.NormTopK))
}

func (o *launchOps) Experts(results, xn Tensor, ex Experts, r Routing) {
	T, H, K, I := xn.Rows, xn.Cols, r.K, ex.Inter
	checkT("Experts", xn)
	shape("Experts", results, T*K, H)
	shape("Experts", ex.Gate, ex.N*I, H)
	shape("Experts", ex.Up, ex.N*I, H)
	shape("Experts", ex.Down, ex.N*H, I)
	checkI("Experts", r.Idx, T*K)
	TK := T * K
	if TK == 0 {
		return
	}
	g := Tensor{Mem: o.scratch(&o.gate, TK*I, F32), Rows: TK, Cols: I, Stride: I}
	u := Tensor{Mem: o.scratch(&o.up, TK*I, F32), Rows: TK, Cols: I, Stride: I}
	lin := func(dst, x Tensor, xdiv int, w Tensor, nout, nin int) {
		o.launch("expert_linear", Dim3{X: cdiv(nout, skinnyCols), Y: ex.N + 1, Z: 1}, block(threads), tp(dst), st(dst),
			tp(x), st(x), Int(xdiv), tp(w), st(w), ip(r.Idx), Int(TK), Int(nout), Int(nin), Int(ex.N))
	}
	lin(g, xn, K, ex.Gate, I, H)
	lin(u, xn, K, ex.Up, I, H)
	o.siluMul(g, g, u)
	lin(results, g, 1, ex.Down, H, I)
}

func (o *launchOps) Combine(out, results Tensor, r Routing) {
	T, H := out.Rows, out.Cols
	checkT("Combine", out)
	shape("Combine", results, T*r.K, H)
	shape("Combine", r.W, T, r.K)
	o.launch("combine", rows(T), block(threads), tp(out), st(out), tp(results), st(results), tp(r.W), st(r.W),
		Int(T), Int(r.K), Int(H))
}
