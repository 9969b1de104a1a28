package cudaexec_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/glmbench/glmbench/engine/cudaexec"
	"github.com/glmbench/glmbench/engine/cudaexec/emu"
	"github.com/glmbench/glmbench/engine/cudaexec/fakecuda"
	"github.com/glmbench/glmbench/kernels"
)

// The tests below run every op of NewLaunchOps through the kernel emulator
// (kernels.cu compiled with g++ and run on the CPU) against references
// computed here: float64 for the arithmetic, brute force for the
// selections. They skip when g++ is missing.

const eps24 = 1.0 / (1 << 24) // float32's unit roundoff

// eachOps runs body on every Ops that runs kernels.cu here, each a
// subtest: NewLaunchOps over a fresh emulator ("emu", skipped without
// g++), the GPU's ("cuda", OpenDevice: skipped without a device, failed
// instead when GLMBENCH_REQUIRE_CUDA=1), and OpenDevice's on the fake
// driver ("fakecuda", skipped without g++: the same kernels, each launch
// through internal/cuda's bindings), so one test binary checks the same
// truths on a dev machine and on a GPU.
func eachOps(t *testing.T, body func(t *testing.T, o cudaexec.Ops)) {
	t.Run("emu", func(t *testing.T) {
		d, err := emu.Start()
		if errors.Is(err, emu.ErrNoCompiler) {
			t.Skip("g++ is not on PATH: the kernel emulator cannot be built, so the kernels are not tested here")
		}
		if err != nil {
			t.Fatal(err)
		}
		run(t, d.Ops(), body)
	})
	t.Run("cuda", func(t *testing.T) {
		o, err := cudaexec.OpenDevice(cudaexec.DeviceOptions{})
		if err != nil {
			if os.Getenv("GLMBENCH_REQUIRE_CUDA") == "1" {
				t.Fatalf("GLMBENCH_REQUIRE_CUDA=1 and no device: %v", err)
			}
			t.Skipf("no CUDA device: %v", err)
		}
		run(t, o, body)
	})
	t.Run("fakecuda", func(t *testing.T) {
		dir := fakecuda.Use(t) // skips without g++
		o, err := cudaexec.OpenDevice(cudaexec.DeviceOptions{CacheDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		run(t, o, body)
	})
}

func run(t *testing.T, o cudaexec.Ops, body func(t *testing.T, o cudaexec.Ops)) {
	t.Cleanup(func() {
		if err := o.Close(); err != nil {
			t.Error(err)
		}
	})
	body(t, o)
}

func randMat(r *rand.Rand, rows, cols int) kernels.Mat {
	m := kernels.NewMat(make([]float32, rows*cols), rows, cols)
	for i := range m.Data {
		m.Data[i] = float32(r.NormFloat64())
	}
	return m
}

// strided uploads m into a view with padding around it (an offset, a wider
// stride), so the ops see a strided tensor.
func strided(o cudaexec.Ops, m kernels.Mat) cudaexec.Tensor {
	big := o.Alloc(m.Rows+1, m.Cols+3)
	v := big.Slice(1, m.Rows+1, 2, m.Cols+2)
	o.Upload(v, m)
	return v
}

func dense(o cudaexec.Ops, m kernels.Mat) cudaexec.Tensor {
	t := o.Alloc(m.Rows, m.Cols)
	o.Upload(t, m)
	return t
}

func ints(o cudaexec.Ops, v []int32) cudaexec.Ints {
	d := o.AllocInts(len(v))
	o.UploadInts(d, v)
	return d
}

func down(t *testing.T, o cudaexec.Ops, src cudaexec.Tensor) kernels.Mat {
	t.Helper()
	m := kernels.NewMat(make([]float32, src.Rows*src.Cols), src.Rows, src.Cols)
	o.Download(m, src)
	if err := o.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

func downInts(t *testing.T, o cudaexec.Ops, src cudaexec.Ints) []int32 {
	t.Helper()
	v := make([]int32, src.Len)
	o.DownloadInts(v, src)
	if err := o.Err(); err != nil {
		t.Fatal(err)
	}
	return v
}

func at(m kernels.Mat, i, j int) float64 { return float64(m.Data[i*m.Stride+j]) }

// within fails unless |got − want| ≤ tol at (i, j).
func within(t *testing.T, what string, i, j int, got float32, want, tol float64) {
	t.Helper()
	if d := math.Abs(float64(got) - want); !(d <= tol) {
		t.Errorf("%s [%d,%d] = %v, want %v ± %.3g (off by %.3g)", what, i, j, got, want, tol, d)
	}
}

func TestLaunchOpsLinearsAreWithinTheirRoundingBound(t *testing.T) {
	eachOps(t, func(t *testing.T, o cudaexec.Ops) {
		r := rand.New(rand.NewPCG(1, 2))
		// Sizes that are not multiples of the tiles, crossing tile edges, on
		// the skinny kernels (≤ 64 rows) and the wide ones.
		for _, sz := range []struct{ M, N, K int }{{5, 131, 19}, {17, 65, 33}, {130, 7, 9}, {70, 131, 40}, {1, 3, 1}} {
			x, w, wn := randMat(r, sz.M, sz.K), randMat(r, sz.N, sz.K), randMat(r, sz.K, sz.N)
			dst := o.Alloc(sz.M+2, sz.N+1).Slice(1, sz.M+1, 1, sz.N+1)
			// check compares dst with x · W, where wkj(k, j) is W's
			// element (k, j): w transposed for MatMulT, wn for MatMul.
			check := func(op string, wkj func(k, j int) float64) {
				got := down(t, o, dst)
				for i := range sz.M {
					for j := range sz.N {
						var s, a float64
						for k := range sz.K {
							s += at(x, i, k) * wkj(k, j)
							a += math.Abs(at(x, i, k) * wkj(k, j))
						}
						within(t, op, i, j, got.Data[i*sz.N+j], s, float64(sz.K)*eps24*a)
					}
				}
			}
			o.MatMulT(dst, strided(o, x), strided(o, w))
			check("MatMulT", func(k, j int) float64 { return at(w, j, k) })
			o.MatMul(dst, strided(o, x), strided(o, wn))
			check("MatMul", func(k, j int) float64 { return at(wn, k, j) })
		}
	})
}

func TestLaunchOpsNormsAreWithinAMillionth(t *testing.T) {
	eachOps(t, func(t *testing.T, o cudaexec.Ops) {
		r := rand.New(rand.NewPCG(3, 4))
		T, H := 3, 301
		x, w, b := randMat(r, T, H), randMat(r, 1, H), randMat(r, 1, H)
		dst := o.Alloc(T, H)
		o.RMSNorm(dst, strided(o, x), dense(o, w), 1e-5)
		got := down(t, o, dst)
		for i := range T {
			var ss float64
			for j := range H {
				ss += at(x, i, j) * at(x, i, j)
			}
			inv := 1 / math.Sqrt(ss/float64(H)+1e-5)
			for j := range H {
				want := at(x, i, j) * inv * at(w, 0, j)
				within(t, "RMSNorm", i, j, got.Data[i*H+j], want, 1e-6*math.Abs(want))
			}
		}
		o.LayerNorm(dst, strided(o, x), dense(o, w), dense(o, b), 1e-6)
		got = down(t, o, dst)
		for i := range T {
			var mean, vr float64
			for j := range H {
				mean += at(x, i, j)
			}
			mean /= float64(H)
			for j := range H {
				vr += (at(x, i, j) - mean) * (at(x, i, j) - mean)
			}
			inv := 1 / math.Sqrt(vr/float64(H)+1e-6)
			for j := range H {
				n := (at(x, i, j) - mean) * inv * at(w, 0, j)
				want := n + at(b, 0, j)
				// Relative to the normed product, before the bias is added.
				within(t, "LayerNorm", i, j, got.Data[i*H+j], want, 1e-6*(math.Abs(n)+math.Abs(want)))
			}
		}
	})
}

func TestLaunchOpsRoPEEqualsTheCPUKernelBitForBit(t *testing.T) {
	eachOps(t, func(t *testing.T, o cudaexec.Ops) {
		r := rand.New(rand.NewPCG(5, 6))
		rp := kernels.NewRope(8, 40, 10000)
		dr := o.UploadRope(rp)
		x := randMat(r, 4, 8)
		pos := []int32{0, 7, 39, 3}
		xd := strided(o, x)
		o.RoPE(xd, ints(o, pos), dr)
		got := down(t, o, xd)
		kernels.Default().RoPE(x, pos, rp)
		if !slices.Equal(got.Data, x.Data) {
			t.Errorf("RoPE\n got %v\nwant %v", got.Data, x.Data)
		}
	})
}

func TestLaunchOpsElementwiseOps(t *testing.T) {
	eachOps(t, func(t *testing.T, o cudaexec.Ops) {
		r := rand.New(rand.NewPCG(7, 8))
		T, C := 3, 300
		a, b := randMat(r, T, C), randMat(r, T, C)
		ad, bd := strided(o, a), strided(o, b)
		dst := o.Alloc(T, C)

		o.Add(dst, ad, bd)
		got := down(t, o, dst)
		for i := range a.Data {
			if got.Data[i] != a.Data[i]+b.Data[i] {
				t.Fatalf("Add [%d] = %v, want %v", i, got.Data[i], a.Data[i]+b.Data[i])
			}
		}
		o.Copy(dst, ad)
		if got := down(t, o, dst); !slices.Equal(got.Data, a.Data) {
			t.Error("Copy did not copy")
		}
		o.Scale(ad, 0.75)
		got = down(t, o, ad)
		for i := range a.Data {
			if got.Data[i] != a.Data[i]*0.75 {
				t.Fatalf("Scale [%d] = %v, want %v", i, got.Data[i], a.Data[i]*0.75)
			}
		}
		o.Sigmoid(dst, bd)
		got = down(t, o, dst)
		for i, v := range b.Data {
			want := 1 / (1 + math.Exp(-float64(v)))
			within(t, "Sigmoid", i/C, i%C, got.Data[i], want, 1e-6*want)
		}

		table := randMat(r, 6, C)
		td := strided(o, table)
		rows := []int32{5, 0, 5}
		o.GatherRows(dst, td, ints(o, rows))
		got = down(t, o, dst)
		for i, rw := range rows {
			if !slices.Equal(got.Row(i), table.Row(int(rw))) {
				t.Errorf("GatherRows row %d is not table row %d", i, rw)
			}
		}
		o.Embed(dst, td, ints(o, rows), ints(o, []int32{3, 0, 1}), true)
		got = down(t, o, dst)
		if !slices.Equal(got.Row(0), table.Row(5)) || !slices.Equal(got.Row(2), table.Row(5)) ||
			slices.ContainsFunc(got.Row(1), func(v float32) bool { return v != 0 }) {
			t.Error("Embed with zeroAtPos0: want rows 5, zeros (position 0), 5")
		}
		o.Embed(dst, td, ints(o, rows), ints(o, []int32{3, 0, 1}), false)
		if got := down(t, o, dst); !slices.Equal(got.Row(1), table.Row(0)) {
			t.Error("Embed without zeroAtPos0: row 1 is not table row 0")
		}
	})
}

func TestLaunchOpsWriteKVPutsEachRowInItsSlot(t *testing.T) {
	eachOps(t, func(t *testing.T, o cudaexec.Ops) {
		r := rand.New(rand.NewPCG(9, 10))
		slotsN, rank, dr, di := 10, 5, 3, 4
		kv := cudaexec.KVLayer{MLA: o.Alloc(slotsN, rank+dr), Index: o.Alloc(di, slotsN), Rank: rank}
		c, kpe, ik := randMat(r, 2, rank), randMat(r, 2, dr), randMat(r, 2, di)
		slots := []int32{7, 2}
		o.WriteKV(kv, strided(o, c), strided(o, kpe), strided(o, ik), ints(o, slots))
		mla, idx := down(t, o, kv.MLA), down(t, o, kv.Index)
		for i, s := range slots {
			if !slices.Equal(mla.Row(int(s)), append(slices.Clone(c.Row(i)), kpe.Row(i)...)) {
				t.Errorf("slot %d's MLA row is not [c | kpe] of row %d", s, i)
			}
			for d := range di {
				if idx.Data[d*slotsN+int(s)] != ik.Data[i*di+d] {
					t.Errorf("index key %d of slot %d is not row %d's", d, s, i)
				}
			}
		}
		if slices.ContainsFunc(mla.Row(0), func(v float32) bool { return v != 0 }) {
			t.Error("slot 0 was written")
		}
	})
}

// topkRef is the exact selection: the k best of score by value (NaN
// last, ties to the earlier position), returned as positions in order.
func topkRef(score []float32, k int) []int {
	pos := make([]int, len(score))
	for i := range pos {
		pos[i] = i
	}
	key := func(v float32) float64 {
		if v != v {
			return math.Inf(-1)
		}
		return float64(v)
	}
	slices.SortStableFunc(pos, func(a, b int) int {
		va, vb := score[a], score[b]
		an, bn := va != va, vb != vb
		switch {
		case an && bn:
			return 0
		case an:
			return 1
		case bn:
			return -1
		case key(va) > key(vb):
			return -1
		case key(va) < key(vb):
			return 1
		}
		return 0
	})
	out := slices.Clone(pos[:k])
	slices.Sort(out)
	return out
}

// selectBatch is a two-sequence batch for the indexer: sequence 0 has n0
// new rows from position p0, sequence 1 n1 from p1, their slots scattered.
type selectBatch struct {
	b        cudaexec.Batch
	slots    [][]int32
	rowSeq   []int32
	rowPos   []int32
	nSlots   int
	kv       cudaexec.KVLayer
	iq, iw   kernels.Mat
	ik       kernels.Mat // di × nSlots
	heads    int
	dim      int
	rowsOfSq [][2]int
}

func newSelectBatch(o cudaexec.Ops, r *rand.Rand, seqs [][2]int, heads, dim int, quant bool) *selectBatch {
	sb := &selectBatch{heads: heads, dim: dim}
	next := int32(0)
	var seqSlots, seqOff []int32
	for j, s := range seqs {
		first, n := s[0], s[1]
		var sl []int32
		for range first + n {
			sl = append(sl, next)
			next += 2 // every other slot: scattered, not one run
		}
		sb.slots = append(sb.slots, sl)
		seqOff = append(seqOff, int32(len(seqSlots)))
		seqSlots = append(seqSlots, sl...)
		for i := range n {
			sb.rowSeq = append(sb.rowSeq, int32(j))
			sb.rowPos = append(sb.rowPos, int32(first+i))
		}
	}
	seqOff = append(seqOff, int32(len(seqSlots)))
	sb.nSlots = int(next)
	T := len(sb.rowPos)
	sb.iq, sb.iw, sb.ik = randMat(r, T, heads*dim), randMat(r, T, heads), randMat(r, dim, sb.nSlots)
	if quant { // small integers: many exactly equal scores
		for _, m := range []kernels.Mat{sb.iq, sb.iw, sb.ik} {
			for i, v := range m.Data {
				m.Data[i] = float32(math.Round(float64(v)))
			}
		}
	}
	sb.kv = cudaexec.KVLayer{MLA: o.Alloc(sb.nSlots, 4), Index: dense(o, sb.ik), Rank: 2}
	sb.b = cudaexec.Batch{T: T, RowSeq: ints(o, sb.rowSeq), RowPos: ints(o, sb.rowPos),
		RowSlot: o.AllocInts(T), SeqSlots: ints(o, seqSlots), SeqOff: ints(o, seqOff),
		Host: cudaexec.HostBatch{RowSeq: sb.rowSeq, RowPos: sb.rowPos, SeqSlots: seqSlots, SeqOff: seqOff}}
	return sb
}

func TestLaunchOpsSelectKeysScoresAndPicksExactly(t *testing.T) {
	eachOps(t, func(t *testing.T, o cudaexec.Ops) {
		r := rand.New(rand.NewPCG(11, 12))
		const topk = 5
		for _, quant := range []bool{false, true} {
			sb := newSelectBatch(o, r, [][2]int{{0, 9}, {20, 3}}, 3, 4, quant)
			T := sb.b.T
			sel := cudaexec.Selection{Picked: o.AllocInts(T * topk), Count: o.AllocInts(T), TopK: topk}
			o.SelectKeys(sel, sb.kv, strided(o, sb.iq), strided(o, sb.iw), sb.b)
			picked, count := downInts(t, o, sel.Picked), downInts(t, o, sel.Count)
			sm, stride, ok := cudaexec.IndexScores(o)
			if !ok {
				t.Skip("these Ops keep no indexer scores to read")
			}
			all := make([]float32, sm.Len())
			o.Download(kernels.NewMat(all, 1, len(all)), cudaexec.Tensor{Mem: sm, Rows: 1, Cols: len(all), Stride: len(all)})
			for row := range T {
				p, sq := int(sb.rowPos[row]), sb.rowSeq[row]
				var wantPos []int
				if p+1 <= topk {
					for j := range p + 1 {
						wantPos = append(wantPos, j)
					}
				} else {
					sc := all[row*stride : row*stride+p+1]
					for j, got := range sc { // the scores against float64
						s := sb.slots[sq][j]
						var want, bound float64
						for h := range sb.heads {
							var dot, a float64
							for d := range sb.dim {
								dot += at(sb.iq, row, h*sb.dim+d) * at(sb.ik, d, int(s))
								a += math.Abs(at(sb.iq, row, h*sb.dim+d) * at(sb.ik, d, int(s)))
							}
							want += at(sb.iw, row, h) * max(dot, 0)
							bound += math.Abs(at(sb.iw, row, h)) * (a*float64(sb.dim+2)*eps24 + math.Abs(dot)*float64(sb.heads+1)*eps24)
						}
						within(t, "indexer score", row, j, got, want, bound)
					}
					wantPos = topkRef(sc, topk) // the selection exact, from the scores downloaded
				}
				if int(count[row]) != len(wantPos) {
					t.Errorf("row %d (position %d): count %d, want %d", row, p, count[row], len(wantPos))
					continue
				}
				for i, j := range wantPos {
					if picked[row*topk+i] != sb.slots[sq][j] {
						t.Errorf("row %d (position %d, quantised %v): picked %v, want the slots of positions %v",
							row, p, quant, picked[row*topk:row*topk+len(wantPos)], wantPos)
						break
					}
				}
			}
		}
	})
}

func TestTopKSelectKernelOrdersTiesNaNsAndZeros(t *testing.T) {
	d, err := emu.Start()
	if errors.Is(err, emu.ErrNoCompiler) {
		t.Skip("g++ is not on PATH: the kernel emulator cannot be built")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	negz := float32(math.Copysign(0, -1))
	// One row per case, each at position len−1 of a sequence whose slot of
	// position j is 100 + j; the row is longer than the block (300 > 256).
	long := make([]float32, 300)
	for i := range long {
		long[i] = float32(i % 7)
	}
	long[3], long[299] = nan, 6
	cases := []struct {
		name  string
		score []float32
		k     int
	}{
		{"ties go to the earlier position", []float32{1, 2, 2, 2, 0, 2}, 3},
		{"NaN ranks below every number", []float32{nan, -inf, nan, -1, nan}, 3},
		{"-0 equals +0", []float32{0, negz, 0, negz, 1}, 3},
		{"infinities", []float32{inf, -inf, 3, inf, -inf}, 2},
		{"a row longer than the block", long, 40},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := len(c.score)
			m := func(v []float32) cudaexec.Mem {
				x := d.Alloc(len(v), cudaexec.F32)
				d.UploadF32(x, 0, v)
				return x
			}
			mi := func(v []int32) cudaexec.Mem {
				x := d.Alloc(len(v), cudaexec.I32)
				d.UploadI32(x, 0, v)
				return x
			}
			slots := make([]int32, n)
			for j := range slots {
				slots[j] = int32(100 + j)
			}
			picked, count := d.Alloc(c.k, cudaexec.I32), d.Alloc(1, cudaexec.I32)
			d.Call("topk_select", cudaexec.Dim3{X: 1, Y: 1, Z: 1}, cudaexec.Dim3{X: 256, Y: 1, Z: 1}, 0,
				cudaexec.Ptr(picked, 0), cudaexec.Ptr(count, 0), cudaexec.Ptr(m(c.score), 0), cudaexec.Int(n),
				cudaexec.Ptr(mi(slots), 0), cudaexec.Int(n), cudaexec.Ptr(mi([]int32{0, int32(n)}), 0),
				cudaexec.Ptr(mi([]int32{0}), 0), cudaexec.Ptr(mi([]int32{int32(n - 1)}), 0),
				cudaexec.Int(100+n), cudaexec.Int(1), cudaexec.Int(c.k))
			got, cnt := make([]int32, c.k), make([]int32, 1)
			d.DownloadI32(got, picked, 0)
			d.DownloadI32(cnt, count, 0)
			if err := d.Err(); err != nil {
				t.Fatal(err)
			}
			var want []int32
			for _, j := range topkRef(c.score, c.k) {
				want = append(want, int32(100+j))
			}
			if cnt[0] != int32(c.k) || !slices.Equal(got, want) {
				t.Errorf("picked %v (count %d), want %v", got, cnt[0], want)
			}
		})
	}
}

// attendRef is absorbed attention for one (row, head) in float64, and the
// bound on the kernel's error: the scores' dot products (dk terms each),
// propagated through the softmax, and the weighted sum's own.
func attendRef(q []float32, mla kernels.Mat, sel []int32, rank int, scale float64) (out, bound []float64) {
	n := len(sel)
	s, sa := make([]float64, n), make([]float64, n)
	m := math.Inf(-1)
	for j, sl := range sel {
		for d, qv := range q {
			s[j] += float64(qv) * at(mla, int(sl), d)
			sa[j] += math.Abs(float64(qv) * at(mla, int(sl), d))
		}
		s[j] *= scale
		sa[j] *= scale
		m = max(m, s[j])
	}
	var sum, es float64
	for j := range s {
		s[j] = math.Exp(s[j] - m)
		sum += s[j]
	}
	for j := range s {
		s[j] /= sum
		es = max(es, sa[j]*float64(len(q)+1)*eps24)
	}
	out, bound = make([]float64, rank), make([]float64, rank)
	for c := range rank {
		var a float64
		for j, sl := range sel {
			out[c] += s[j] * at(mla, int(sl), c)
			a += s[j] * math.Abs(at(mla, int(sl), c))
		}
		// A score error e moves each weight by up to 2e relatively; exp and
		// the normalisation add a few roundings; the sum n more.
		bound[c] = a * (2*es + 1e-6 + float64(n+4)*eps24)
	}
	return out, bound
}

func TestLaunchOpsAttendIsSoftmaxOverTheSelectedSlots(t *testing.T) {
	eachOps(t, func(t *testing.T, o cudaexec.Ops) {
		r := rand.New(rand.NewPCG(13, 14))
		slotsN, rank, dr, heads, topk := 12, 6, 2, 2, 4
		dk := rank + dr
		mla := randMat(r, slotsN, dk)
		kv := cudaexec.KVLayer{MLA: dense(o, mla), Index: o.Alloc(1, slotsN), Rank: rank}
		sels := [][]int32{{3}, {0, 5, 11, 2}, {7, 8}}
		T := len(sels)
		picked, count := make([]int32, T*topk), make([]int32, T)
		for i, s := range sels {
			copy(picked[i*topk:], s)
			count[i] = int32(len(s))
		}
		qt := randMat(r, T, heads*dk)
		sel := cudaexec.Selection{Picked: ints(o, picked), Count: ints(o, count), TopK: topk}
		out := o.Alloc(T, heads*rank)
		scale := float32(0.4)
		o.Attend(out, strided(o, qt), kv, sel, heads, scale)
		got := down(t, o, out)
		for i, s := range sels {
			for h := range heads {
				want, bound := attendRef(qt.Row(i)[h*dk:(h+1)*dk], mla, s, rank, float64(scale))
				for c := range rank {
					within(t, "Attend", i, h*rank+c, got.Data[i*heads*rank+h*rank+c], want[c], bound[c])
				}
			}
		}
	})
}

// swigluRef is silu(x·gateᵀ) ⊙ (x·upᵀ) · downᵀ for one row in float64, and
// a first-order bound on the kernels' error (each Linear's rounding, the
// gate's few roundings, propagated).
func swigluRef(x []float32, gate, up, down kernels.Mat) (out, bound []float64) {
	I, H := gate.Rows, len(x)
	h, eh := make([]float64, I), make([]float64, I)
	for i := range I {
		var g, u, ga, ua float64
		for d, v := range x {
			g += float64(v) * at(gate, i, d)
			u += float64(v) * at(up, i, d)
			ga += math.Abs(float64(v) * at(gate, i, d))
			ua += math.Abs(float64(v) * at(up, i, d))
		}
		sg := 1 / (1 + math.Exp(-g))
		silu := g * sg
		dsilu := sg * (1 + g*(1-sg))
		h[i] = silu * u
		eg, eu := float64(H)*eps24*ga, float64(H)*eps24*ua
		eh[i] = math.Abs(dsilu*u)*eg + math.Abs(silu)*eu + 8*eps24*math.Abs(h[i])
	}
	out, bound = make([]float64, H), make([]float64, H)
	for j := range H {
		var a float64
		for i := range I {
			out[j] += h[i] * at(down, j, i)
			a += math.Abs(h[i] * at(down, j, i))
			bound[j] += math.Abs(at(down, j, i)) * eh[i]
		}
		bound[j] += float64(I+1) * eps24 * a
	}
	return out, bound
}

func TestLaunchOpsSwiGLUIsWithinItsRoundingBound(t *testing.T) {
	eachOps(t, func(t *testing.T, o cudaexec.Ops) {
		r := rand.New(rand.NewPCG(15, 16))
		T, H, I := 3, 10, 13
		x, g, u, dn := randMat(r, T, H), randMat(r, I, H), randMat(r, I, H), randMat(r, H, I)
		dst := o.Alloc(T, H)
		o.SwiGLU(dst, strided(o, x), cudaexec.MLP{Gate: strided(o, g), Up: strided(o, u), Down: strided(o, dn)})
		got := down(t, o, dst)
		for i := range T {
			want, bound := swigluRef(x.Row(i), g, u, dn)
			for j := range H {
				within(t, "SwiGLU", i, j, got.Data[i*H+j], want[j], bound[j])
			}
		}
	})
}

// expertsWeights are n stacked experts of width inter over hidden h.
func expertsWeights(o cudaexec.Ops, r *rand.Rand, n, inter, h int) (cudaexec.Experts, [3]kernels.Mat) {
	g, u, d := randMat(r, n*inter, h), randMat(r, n*inter, h), randMat(r, n*h, inter)
	return cudaexec.Experts{Gate: dense(o, g), Up: dense(o, u), Down: dense(o, d), N: n, Inter: inter}, [3]kernels.Mat{g, u, d}
}

func TestLaunchOpsExpertsRunEachRoutedExpertOnItsRow(t *testing.T) {
	eachOps(t, func(t *testing.T, o cudaexec.Ops) {
		r := rand.New(rand.NewPCG(17, 18))
		// 280 (row, slot) pairs: more than one block's chunk of 256, and more
		// than one 16-row tile per expert. An expert index out of range (−1,
		// N) gives a zero row.
		T, H, I, N, K := 70, 9, 5, 4, 4
		ex, w := expertsWeights(o, r, N, I, H)
		x := randMat(r, T, H)
		idx := make([]int32, T*K)
		for i := range idx {
			idx[i] = int32(r.IntN(N))
		}
		idx[4], idx[200], idx[279] = -1, int32(N), -1
		rt := cudaexec.Routing{Idx: ints(o, idx), W: o.Alloc(T, K), K: K}
		res := o.Alloc(T*K, H)
		o.Upload(res, randMat(r, T*K, H)) // stale values the op must overwrite
		o.Experts(res, strided(o, x), ex, rt)
		got := down(t, o, res)
		for tk, e := range idx {
			ei := int(e)
			if ei < 0 || ei >= N {
				if slices.ContainsFunc(got.Row(tk), func(v float32) bool { return v != 0 }) {
					t.Errorf("pair %d routed to expert %d (out of range): %v, want zeros", tk, ei, got.Row(tk))
				}
				continue
			}
			want, bound := swigluRef(x.Row(tk/K), w[0].Slice(ei*I, (ei+1)*I, 0, H), w[1].Slice(ei*I, (ei+1)*I, 0, H),
				w[2].Slice(ei*H, (ei+1)*H, 0, I))
			for j := range H {
				within(t, "Experts", tk, j, got.Data[tk*H+j], want[j], bound[j])
			}
		}
	})
}

func TestLaunchOpsCombineEqualsAddScaledInRankOrder(t *testing.T) {
	eachOps(t, func(t *testing.T, o cudaexec.Ops) {
		r := rand.New(rand.NewPCG(19, 20))
		T, H, K := 3, 7, 3
		out, res, w := randMat(r, T, H), randMat(r, T*K, H), randMat(r, T, K)
		od := strided(o, out)
		o.Combine(od, strided(o, res), cudaexec.Routing{W: strided(o, w), K: K, Idx: o.AllocInts(T * K)})
		got := down(t, o, od)
		cpu := kernels.Default()
		for i := range T {
			for k := range K {
				cpu.AddScaled(out.Row(i), w.Data[i*K+k], res.Row(i*K+k))
			}
		}
		if !slices.Equal(got.Data, out.Data) {
			t.Errorf("Combine\n got %v\nwant %v", got.Data, out.Data)
		}
	})
}

// routeRef is the model's noaux_tc route (engine/model's route) on sigmoid
// scores, with the CPU's TopK.
func routeRef(s, bias []float32, rc cudaexec.RouteConfig) ([]int32, []float32) {
	cpu := kernels.Default()
	E := len(s)
	choice := make([]float32, E)
	for i := range E {
		choice[i] = s[i] + bias[i]
	}
	groups := max(rc.Groups, 1)
	if groups > 1 {
		per := E / groups
		gs := make([]float32, groups)
		top2 := make([]int32, 2)
		for g := range groups {
			cpu.TopK(top2, nil, choice[g*per:(g+1)*per])
			gs[g] = choice[g*per+int(top2[0])] + choice[g*per+int(top2[1])]
		}
		gidx := make([]int32, max(rc.TopKGroup, 1))
		cpu.TopK(gidx, nil, gs)
		for g := range groups {
			if !slices.Contains(gidx, int32(g)) {
				for i := g * per; i < (g+1)*per; i++ {
					choice[i] = float32(math.Inf(-1))
				}
			}
		}
	}
	idx := make([]int32, rc.K)
	cpu.TopK(idx, nil, choice)
	w := make([]float32, rc.K)
	var sum float32
	for i, e := range idx {
		w[i] = s[e]
		sum += w[i]
	}
	norm := rc.Scaling
	if rc.NormTopK {
		norm /= sum + 1e-20
	}
	for i := range w {
		w[i] *= norm
	}
	return idx, w
}

func TestLaunchOpsRouteEqualsTheModelsRouter(t *testing.T) {
	eachOps(t, func(t *testing.T, o cudaexec.Ops) {
		r := rand.New(rand.NewPCG(21, 22))
		T, N := 6, 16
		scores := randMat(r, T, N)
		for i, v := range scores.Data {
			scores.Data[i] = float32(1 / (1 + math.Exp(-float64(v))))
		}
		// Ties: rows 0 and 1 quantised to a few levels, row 2 all equal, rows 3 and 4 with NaNs.
		for j := range N {
			scores.Data[j] = float32(j%3) / 4
			scores.Data[N+j] = float32(j%2) / 2
			scores.Data[2*N+j] = 0.5
		}
		scores.Data[3*N+1], scores.Data[3*N+9] = float32(math.NaN()), float32(math.NaN())
		for j := 2; j < N; j++ { // row 4 mostly NaN: the NaNs' own order picks experts
			scores.Data[4*N+j] = float32(math.NaN())
		}
		bias := randMat(r, 1, N)
		for i := range bias.Data {
			bias.Data[i] *= 0.1
		}
		bias.Data[4] = 0
		for _, rc := range []cudaexec.RouteConfig{
			{Groups: 1, TopKGroup: 1, K: 4, Scaling: 2.5, NormTopK: true},
			{Groups: 4, TopKGroup: 2, K: 3, Scaling: 1, NormTopK: true},
			{Groups: 8, TopKGroup: 3, K: 5, Scaling: 1.5, NormTopK: false},
		} {
			rt := cudaexec.Routing{Idx: o.AllocInts(T * rc.K), W: o.Alloc(T, rc.K), K: rc.K}
			o.Route(rt, strided(o, scores), strided(o, bias), rc)
			idx, w := downInts(t, o, rt.Idx), down(t, o, rt.W)
			for i := range T {
				wi, ww := routeRef(scores.Row(i), bias.Data, rc)
				bits := func(v []float32) []uint32 {
					var b []uint32
					for _, x := range v {
						b = append(b, math.Float32bits(x))
					}
					return b
				}
				if !slices.Equal(idx[i*rc.K:(i+1)*rc.K], wi) || !slices.Equal(bits(w.Row(i)), bits(ww)) {
					t.Errorf("%+v row %d: experts %v weights %v, want %v %v", rc, i, idx[i*rc.K:(i+1)*rc.K], w.Row(i), wi, ww)
				}
			}
		}
	})
}

func TestLaunchOpsSkinnyAndWideGEMMsGiveARowTheSameBits(t *testing.T) {
	eachOps(t, func(t *testing.T, o cudaexec.Ops) {
		r := rand.New(rand.NewPCG(25, 26))
		const M, row = 150, 77 // 150 rows take the wide kernels, 1 the skinny ones
		K, N := 45, 70
		x := randMat(r, M, K)
		xM, x1 := dense(o, x), dense(o, kernels.NewMat(slices.Clone(x.Row(row)), 1, K))
		for _, c := range []struct {
			name string
			op   func(dst, x, w cudaexec.Tensor)
			w    kernels.Mat
		}{{"MatMulT", o.MatMulT, randMat(r, N, K)}, {"MatMul", o.MatMul, randMat(r, K, N)}} {
			w := dense(o, c.w)
			dM, d1 := o.Alloc(M, N), o.Alloc(1, N)
			c.op(dM, xM, w)
			c.op(d1, x1, w)
			if a, b := down(t, o, dM), down(t, o, d1); !slices.Equal(a.Row(row), b.Row(0)) {
				t.Errorf("%s: row %d of %d rows %v, alone %v", c.name, row, M, a.Row(row), b.Row(0))
			}
		}
	})
}

// TestLaunchOpsRowsAreBatchInvariant holds that a row alone and the same
// row in a batch of 64 get the same bits from matmul_t, rmsnorm, attend,
// experts and the indexer's select.
func TestLaunchOpsRowsAreBatchInvariant(t *testing.T) {
	eachOps(t, func(t *testing.T, o cudaexec.Ops) {
		r := rand.New(rand.NewPCG(23, 24))
		const B, row = 64, 37
		H, N := 24, 10
		x := randMat(r, B, H)
		one := kernels.NewMat(slices.Clone(x.Row(row)), 1, H)
		xB, x1 := dense(o, x), dense(o, one)
		same := func(what string, batch, alone kernels.Mat) {
			t.Helper()
			if !slices.Equal(batch.Row(row), alone.Row(0)) {
				t.Errorf("%s: row %d in a batch of %d %v, alone %v", what, row, B, batch.Row(row), alone.Row(0))
			}
		}

		w := dense(o, randMat(r, N, H))
		dB, d1 := o.Alloc(B, N), o.Alloc(1, N)
		o.MatMulT(dB, xB, w)
		o.MatMulT(d1, x1, w)
		same("MatMulT", down(t, o, dB), down(t, o, d1))

		nw := dense(o, randMat(r, 1, H))
		nB, n1 := o.Alloc(B, H), o.Alloc(1, H)
		o.RMSNorm(nB, xB, nw, 1e-6)
		o.RMSNorm(n1, x1, nw, 1e-6)
		same("RMSNorm", down(t, o, nB), down(t, o, n1))

		ex, _ := expertsWeights(o, r, 3, 4, H)
		K := 2
		idx := make([]int32, B*K)
		for i := range idx {
			idx[i] = int32(r.IntN(3))
		}
		rB := cudaexec.Routing{Idx: ints(o, idx), W: o.Alloc(B, K), K: K}
		r1 := cudaexec.Routing{Idx: ints(o, idx[row*K:(row+1)*K]), W: o.Alloc(1, K), K: K}
		eB, e1 := o.Alloc(B*K, H), o.Alloc(K, H)
		o.Experts(eB, xB, ex, rB)
		o.Experts(e1, x1, ex, r1)
		gotB, got1 := down(t, o, eB), down(t, o, e1)
		if !slices.Equal(gotB.Data[row*K*H:(row+1)*K*H], got1.Data) {
			t.Errorf("Experts: row %d in a batch of %d differs from alone", row, B)
		}

		// Attention and the indexer's select: a sequence of 64 new rows (its
		// positions 0…63) against row 37 alone, at the same position.
		const topk = 8
		sb := newSelectBatch(o, r, [][2]int{{0, B}}, 2, 4, false)
		selB := cudaexec.Selection{Picked: o.AllocInts(B * topk), Count: o.AllocInts(B), TopK: topk}
		o.SelectKeys(selB, sb.kv, dense(o, sb.iq), dense(o, sb.iw), sb.b)
		sb1 := cudaexec.Batch{T: 1, RowSeq: ints(o, []int32{0}), RowPos: ints(o, []int32{row}), RowSlot: o.AllocInts(1),
			SeqSlots: sb.b.SeqSlots, SeqOff: sb.b.SeqOff,
			Host: cudaexec.HostBatch{RowSeq: []int32{0}, RowPos: []int32{row}, SeqSlots: sb.b.Host.SeqSlots, SeqOff: sb.b.Host.SeqOff}}
		sel1 := cudaexec.Selection{Picked: o.AllocInts(topk), Count: o.AllocInts(1), TopK: topk}
		o.SelectKeys(sel1, sb.kv, dense(o, kernels.NewMat(sb.iq.Row(row), 1, sb.iq.Cols)),
			dense(o, kernels.NewMat(sb.iw.Row(row), 1, sb.iw.Cols)), sb1)
		pB, p1 := downInts(t, o, selB.Picked), downInts(t, o, sel1.Picked)
		if !slices.Equal(pB[row*topk:(row+1)*topk], p1) {
			t.Errorf("SelectKeys: row %d in the batch picks %v, alone %v", row, pB[row*topk:(row+1)*topk], p1)
		}

		heads, rank, dk := 2, 6, 8
		mla := dense(o, randMat(r, sb.nSlots, dk))
		kv := cudaexec.KVLayer{MLA: mla, Index: sb.kv.Index, Rank: rank}
		qt := randMat(r, B, heads*dk)
		aB, a1 := o.Alloc(B, heads*rank), o.Alloc(1, heads*rank)
		o.Attend(aB, dense(o, qt), kv, selB, heads, 0.3)
		o.Attend(a1, dense(o, kernels.NewMat(qt.Row(row), 1, qt.Cols)), kv, sel1, heads, 0.3)
		same("Attend", down(t, o, aB), down(t, o, a1))
	})
}

func TestLaunchOpsCopiesStridedViewsBothWays(t *testing.T) {
	eachOps(t, func(t *testing.T, o cudaexec.Ops) {
		r := rand.New(rand.NewPCG(27, 28))
		host := randMat(r, 4, 9).Slice(1, 4, 2, 7) // a 3×5 view of a 4×9 host matrix
		dev := o.Alloc(5, 8).Slice(1, 4, 3, 8)     // a 3×5 view of a 5×8 tensor
		o.Upload(dev, host)
		back := randMat(r, 3, 11).Slice(0, 3, 4, 9)
		o.Download(back, dev)
		if err := o.Err(); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if !slices.Equal(back.Row(i), host.Row(i)) {
				t.Errorf("row %d came back %v, went up %v", i, back.Row(i), host.Row(i))
			}
		}
		whole := down(t, o, cudaexec.Tensor{Mem: dev.Mem, Rows: 5, Cols: 8, Stride: 8})
		if whole.Data[0] != 0 || whole.Data[8+2] != 0 || whole.Data[8+3] != host.Row(0)[0] {
			t.Error("the upload wrote outside its view")
		}
	})
}

// BenchmarkLaunchOpsMatMulTOnTheGPU measures kernels.cu's matmul_t (the
// wide tile) on the GPU, as TFLOP/s (2·M·N·K per product), for the
// comparison with cuBLAS and PyTorch in the device script:
//
//	go test -c ./engine/cudaexec && ./cudaexec.test -test.run '^$' -test.bench MatMulTOnTheGPU
//
// It skips without a device.
func BenchmarkLaunchOpsMatMulTOnTheGPU(b *testing.B) {
	o, err := cudaexec.OpenDevice(cudaexec.DeviceOptions{})
	if err != nil {
		b.Skipf("no CUDA device: %v", err)
	}
	defer o.Close()
	r := rand.New(rand.NewPCG(29, 30))
	for _, n := range []int{1024, 4096} {
		b.Run(fmt.Sprintf("%dx%dx%d", n, n, n), func(b *testing.B) {
			x, w, dst := dense(o, randMat(r, n, n)), dense(o, randMat(r, n, n)), o.Alloc(n, n)
			one := kernels.NewMat(make([]float32, 1), 1, 1)
			o.MatMulT(dst, x, w) // warm up: the module loaded, the clocks up
			o.Download(one, dst.Slice(0, 1, 0, 1))
			b.ResetTimer()
			for range b.N {
				o.MatMulT(dst, x, w)
			}
			o.Download(one, dst.Slice(0, 1, 0, 1)) // waits for the products
			b.StopTimer()
			if err := o.Err(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e12, "TFLOP/s")
			for _, m := range []cudaexec.Mem{x.Mem, w.Mem, dst.Mem} {
				o.Free(m)
			}
		})
	}
}
