package cudaexec

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/glmbench/glmbench/engine/cudaexec/cudatest"
	"github.com/glmbench/glmbench/engine/model"
	"github.com/glmbench/glmbench/internal/cuda"
	"github.com/glmbench/glmbench/kernels"
)

// The device tests run on a GPU and skip without one, unless
// GLMBENCH_REQUIRE_CUDA=1 asks that a missing GPU fail them instead (the
// device script sets it, so a broken driver cannot pass as a skip).

// gpuRequired says whether a missing GPU is a failure.
func gpuRequired() bool { return os.Getenv("GLMBENCH_REQUIRE_CUDA") == "1" }

// gpuMissing skips t, or fails it under GLMBENCH_REQUIRE_CUDA=1, for err.
func gpuMissing(t testing.TB, err error) {
	t.Helper()
	if gpuRequired() {
		t.Fatalf("GLMBENCH_REQUIRE_CUDA=1 but no usable GPU: %v", err)
	}
	t.Skipf("no GPU: %v", err)
}

// gpuOpen opens the device as a bare Memory and Caller (closed at the end of t).
func gpuOpen(t testing.TB) *gpuDevice {
	t.Helper()
	d, err := openGPU(DeviceOptions{})
	if errors.Is(err, ErrNoDevice) {
		gpuMissing(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return d
}

var (
	gpuOnce   sync.Once
	gpuOpsAll Ops
	gpuOpsErr error
)

// gpuOps is the device's Ops, opened once for the tests that share it (it
// is never closed: the process's exit releases it).
func gpuOps(t testing.TB) Ops {
	t.Helper()
	gpuOnce.Do(func() { gpuOpsAll, gpuOpsErr = OpenDevice(DeviceOptions{}) })
	if errors.Is(gpuOpsErr, ErrNoDevice) {
		gpuMissing(t, gpuOpsErr)
	}
	if gpuOpsErr != nil {
		t.Fatal(gpuOpsErr)
	}
	return gpuOpsAll
}

// gpuEnv moves test data in and out of an Ops.
type gpuEnv struct {
	t   testing.TB
	ops Ops
}

func (e gpuEnv) up(m kernels.Mat) Tensor {
	x := e.ops.Alloc(m.Rows, m.Cols)
	e.ops.Upload(x, m)
	return x
}

func (e gpuEnv) down(x Tensor) kernels.Mat {
	m := kernels.NewMat(make([]float32, x.Rows*x.Cols), x.Rows, x.Cols)
	e.ops.Download(m, x)
	e.ok()
	return m
}

func (e gpuEnv) ints(v []int32) Ints {
	x := e.ops.AllocInts(len(v))
	e.ops.UploadInts(x, v)
	return x
}

func (e gpuEnv) downInts(v Ints) []int32 {
	out := make([]int32, v.Len)
	e.ops.DownloadInts(out, v)
	e.ok()
	return out
}

func (e gpuEnv) ok() {
	e.t.Helper()
	if err := e.ops.Err(); err != nil {
		e.t.Fatalf("%s: %v", e.ops.Name(), err)
	}
}

// gpuRandMat is a rows × cols matrix of N(0, std²) values.
func gpuRandMat(rng *rand.Rand, rows, cols int, std float64) kernels.Mat {
	m := kernels.NewMat(make([]float32, rows*cols), rows, cols)
	for i := range m.Data {
		m.Data[i] = float32(std * rng.NormFloat64())
	}
	return m
}

// gpuU is float32's unit roundoff, 2⁻²⁴.
const gpuU = 1.0 / (1 << 24)

// TestOpenDeviceWithoutAGPUIsOneLineWrappingErrNoDevice checks what
// `--device cuda` prints on a machine without a driver or device: one
// line, wrapping ErrNoDevice so `--device auto` can fall back.
func TestOpenDeviceWithoutAGPUIsOneLineWrappingErrNoDevice(t *testing.T) {
	ops, err := OpenDevice(DeviceOptions{})
	if err == nil {
		ops.Close()
		t.Skip("this machine has a GPU")
	}
	if !errors.Is(err, ErrNoDevice) {
		t.Fatalf("OpenDevice = %v, want an error wrapping ErrNoDevice", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, ErrNoDevice.Error()+": ") {
		t.Errorf("error %q: want one line starting %q and saying why", msg, ErrNoDevice.Error()+": ")
	}
}

// TestDeviceArgKindsMapOntoTheCLayout checks the Go kinds' C types: a
// pointer is 8 bytes aligned to 8, an int and a float 4 aligned to 4.
func TestDeviceArgKindsMapOntoTheCLayout(t *testing.T) {
	l := cuda.LayoutOf(gpuArgKinds([]ArgKind{ArgInt, ArgPtr, ArgFloat, ArgInt, ArgPtr}))
	want := []int{0, 8, 16, 20, 24}
	if !slices.Equal(l.Offsets, want) || l.Size != 32 {
		t.Errorf("layout %v size %d, want offsets %v size 32", l, l.Size, want)
	}
}

func TestDeviceMemoryRoundTrips(t *testing.T) {
	d := gpuOpen(t)
	if d.cacheWarn != nil {
		t.Logf("not fatal: %v", d.cacheWarn)
	}
	if !strings.HasPrefix(d.Name(), "cuda:0 ") || !strings.Contains(d.Name(), " sm_") {
		t.Errorf("Name() = %q, want like \"cuda:0 NVIDIA H200 sm_90\"", d.Name())
	}
	f := d.Alloc(1000, F32)
	got := make([]float32, 1000)
	for i := range got {
		got[i] = 1
	}
	d.DownloadF32(got, f, 0)
	if slices.ContainsFunc(got, func(v float32) bool { return v != 0 }) {
		t.Error("a fresh F32 allocation is not zero")
	}
	src := []float32{1.5, -2, float32(math.Inf(1)), 3e-39, math.Float32frombits(0x7fc00001)}
	d.UploadF32(f, 997-len(src)+3, src)
	part := make([]float32, len(src))
	d.DownloadF32(part, f, 997-len(src)+3)
	for i := range src {
		if math.Float32bits(part[i]) != math.Float32bits(src[i]) {
			t.Errorf("element %d came back %x, sent %x", i, math.Float32bits(part[i]), math.Float32bits(src[i]))
		}
	}
	d.Free(f)
	n := d.Alloc(1<<20, I32)
	ints := make([]int32, 1<<20)
	for i := range ints {
		ints[i] = int32(i*2654435761) ^ 0x5a5a
	}
	d.UploadI32(n, 0, ints)
	back := make([]int32, len(ints))
	d.DownloadI32(back, n, 0)
	if !slices.Equal(back, ints) {
		t.Error("a 4 MiB int32 upload did not come back equal")
	}
	d.Free(n)
	// Memory that held data is zero again when allocated anew.
	again := d.Alloc(1<<20, I32)
	d.DownloadI32(back, again, 0)
	if slices.ContainsFunc(back, func(v int32) bool { return v != 0 }) {
		t.Error("a reallocated I32 allocation is not zero")
	}
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestDeviceKernelLayoutsEqualKernelSignatures(t *testing.T) {
	d := gpuOpen(t)
	sigs := KernelSignatures()
	if len(sigs) == 0 {
		t.Fatal("KernelSignatures() is empty")
	}
	for name, kinds := range sigs {
		fn, err := d.mod.Function(name)
		if err != nil {
			t.Errorf("kernel %s is not in the compiled module: %v", name, err)
			continue
		}
		info, err := fn.ParamInfo()
		if err != nil {
			t.Errorf("kernel %s: %v", name, err)
			continue
		}
		if want := cuda.LayoutOf(gpuArgKinds(kinds)); !info.Equal(want) {
			t.Errorf("kernel %s: the device lays its parameters out as %v, the Go signature %v as %v", name, info, kinds, want)
		}
	}
}

func TestDeviceCallWithTheWrongArgumentsIsAnErrorNotACrash(t *testing.T) {
	d := gpuOpen(t)
	var name string
	var kinds []ArgKind
	for n, k := range KernelSignatures() {
		if len(k) > 0 && (name == "" || n < name) {
			name, kinds = n, k
		}
	}
	if name == "" {
		t.Fatal("KernelSignatures() has no kernel with parameters")
	}
	// One argument short: the layout cannot match cuFuncGetParamInfo's.
	args := make([]Arg, len(kinds)-1)
	for i, k := range kinds[:len(kinds)-1] {
		args[i] = Arg{Kind: k}
	}
	d.Call(name, Dim3{X: 1}, Dim3{X: 1}, 0, args...)
	if err := d.Err(); err == nil || !strings.Contains(err.Error(), name) {
		t.Fatalf("Err() = %v after calling %s with %d of its %d parameters, want a layout error naming it", err, name, len(args), len(kinds))
	}
	// And the error is sticky: nothing more runs.
	if m := d.Alloc(4, F32); m.Len() != 4 || m.(*gpuMem).ptr != 0 {
		t.Errorf("an allocation after the error has %d elements at %#x, want 4 and nothing allocated", m.Len(), m.(*gpuMem).ptr)
	}
	// The error was this test's own doing: clear it, so that gpuOpen's
	// cleanup frees the device and checks that Close succeeds.
	d.err = nil
}

func TestDeviceCuBLASMatMulTMatchesAFloat64Reference(t *testing.T) {
	d := gpuOpen(t)
	b, err := d.ctx.NewBLAS()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	m, n, k := 37, 29, 133
	x, w := gpuRandMat(rng, m, k, 1), gpuRandMat(rng, n, k, 1)
	px, pw, pd := d.Alloc(m*k, F32).(*gpuMem), d.Alloc(n*k, F32).(*gpuMem), d.Alloc(m*n, F32).(*gpuMem)
	d.UploadF32(px, 0, x.Data)
	d.UploadF32(pw, 0, w.Data)
	if err := b.MatMulT(pd.ptr, px.ptr, pw.ptr, m, n, k); err != nil {
		t.Fatal(err)
	}
	got := kernels.NewMat(make([]float32, m*n), m, n)
	d.DownloadF32(got.Data, pd, 0)
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
	gpuCheckLinear(t, "cuBLAS MatMulT", got, x, w, true)
}

// gpuCheckLinear checks got = x · wᵀ (transposed) or x · w against a
// float64 reference, each element within k·2⁻²⁴·Σ|x||w|, the bound of
// any order of k float32 multiply-adds.
func gpuCheckLinear(t testing.TB, what string, got, x, w kernels.Mat, transposed bool) {
	t.Helper()
	k := x.Cols
	bad := 0
	for i := range got.Rows {
		for j := range got.Cols {
			var ref, abs float64
			for c := range k {
				var wv float32
				if transposed {
					wv = w.Row(j)[c]
				} else {
					wv = w.Row(c)[j]
				}
				p := float64(x.Row(i)[c]) * float64(wv)
				ref += p
				abs += math.Abs(p)
			}
			if d := math.Abs(float64(got.Row(i)[j]) - ref); !(d <= float64(k)*gpuU*abs) {
				if bad++; bad <= 5 {
					t.Errorf("%s [%d,%d] = %g, want %g within %g", what, i, j, got.Row(i)[j], ref, float64(k)*gpuU*abs)
				}
			}
		}
	}
}

// gpuCheckRel checks got against ref (float64, same shape) within rel of
// each row's largest |ref|.
func gpuCheckRel(t testing.TB, what string, got kernels.Mat, ref [][]float64, rel float64) {
	t.Helper()
	bad := 0
	for i := range got.Rows {
		var scale float64
		for _, v := range ref[i] {
			scale = max(scale, math.Abs(v))
		}
		for j, v := range got.Row(i) {
			if d := math.Abs(float64(v) - ref[i][j]); !(d <= rel*scale) {
				if bad++; bad <= 5 {
					t.Errorf("%s [%d,%d] = %g, want %g within %g", what, i, j, v, ref[i][j], rel*scale)
				}
			}
		}
	}
}

func TestDeviceLinearsAreWithinTheirRoundingBound(t *testing.T) {
	e := gpuEnv{t, gpuOps(t)}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, s := range []struct{ m, n, k int }{{1, 1, 1}, {1, 320, 64}, {37, 29, 133}, {64, 300, 1000}, {130, 64, 7}} {
		// x and w are column views of wider tensors, so strides are exercised.
		xw := gpuRandMat(rng, s.m, s.k+5, 1)
		ww := gpuRandMat(rng, s.n, s.k+3, 1)
		x, w := e.up(xw).Slice(0, s.m, 2, 2+s.k), e.up(ww).Slice(0, s.n, 1, 1+s.k)
		dst := e.ops.Alloc(s.m, s.n)
		e.ops.MatMulT(dst, x, w)
		gpuCheckLinear(t, "MatMulT", e.down(dst), xw.Slice(0, s.m, 2, 2+s.k), ww.Slice(0, s.n, 1, 1+s.k), true)

		wn := gpuRandMat(rng, s.k, s.n, 1)
		dst2 := e.ops.Alloc(s.m, s.n)
		e.ops.MatMul(dst2, x, e.up(wn))
		gpuCheckLinear(t, "MatMul", e.down(dst2), xw.Slice(0, s.m, 2, 2+s.k), wn, false)
	}
}

func TestDeviceNormsAreWithin1e6OfAFloat64Reference(t *testing.T) {
	e := gpuEnv{t, gpuOps(t)}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, cols := range []int{4, 16, 64, 256, 1000} {
		x := gpuRandMat(rng, 9, cols, 3)
		for j := range cols { // a common offset: LayerNorm must subtract the mean first
			x.Row(2)[j] += 8
		}
		w, b := gpuRandMat(rng, 1, cols, 1), gpuRandMat(rng, 1, cols, 1)
		const eps = 1e-5
		rms, ln := e.ops.Alloc(9, cols), e.ops.Alloc(9, cols)
		xt := e.up(x)
		e.ops.RMSNorm(rms, xt, e.up(w), eps)
		e.ops.LayerNorm(ln, xt, e.up(w), e.up(b), eps)
		refR, refL := make([][]float64, 9), make([][]float64, 9)
		for i := range 9 {
			row := x.Row(i)
			var ss, mean, vr float64
			for _, v := range row {
				ss += float64(v) * float64(v)
				mean += float64(v)
			}
			mean /= float64(cols)
			for _, v := range row {
				vr += (float64(v) - mean) * (float64(v) - mean)
			}
			vr /= float64(cols)
			refR[i], refL[i] = make([]float64, cols), make([]float64, cols)
			for j, v := range row {
				refR[i][j] = float64(v) / math.Sqrt(ss/float64(cols)+eps) * float64(w.Data[j])
				refL[i][j] = (float64(v)-mean)/math.Sqrt(vr+eps)*float64(w.Data[j]) + float64(b.Data[j])
			}
		}
		gpuCheckRel(t, "RMSNorm", e.down(rms), refR, 1e-6)
		gpuCheckRel(t, "LayerNorm", e.down(ln), refL, 1e-6)
	}
}

func TestDeviceElementwiseOpsAreExact(t *testing.T) {
	e := gpuEnv{t, gpuOps(t)}
	rng := rand.New(rand.NewPCG(7, 8))
	a, b := gpuRandMat(rng, 13, 77, 2), gpuRandMat(rng, 13, 77, 2)
	at, bt := e.up(a), e.up(b)

	sum := e.ops.Alloc(13, 77)
	e.ops.Add(sum, at, bt)
	want := kernels.NewMat(make([]float32, 13*77), 13, 77)
	for i := range want.Data {
		want.Data[i] = a.Data[i] + b.Data[i]
	}
	cudatest.SameBits(t, "Add", e.down(sum), want)
	e.ops.Add(at, at, bt) // dst may be a
	cudatest.SameBits(t, "Add in place", e.down(at), want)

	e.ops.Scale(bt.Slice(2, 9, 3, 50), 0.37)
	for i := range 13 {
		for j := range 77 {
			if i >= 2 && i < 9 && j >= 3 && j < 50 {
				b.Row(i)[j] *= 0.37
			}
		}
	}
	cudatest.SameBits(t, "Scale of a view", e.down(bt), b)

	cp := e.ops.Alloc(7, 20)
	e.ops.Copy(cp, bt.Slice(3, 10, 40, 60))
	cudatest.SameBits(t, "Copy", e.down(cp), b.Slice(3, 10, 40, 60))

	rows := []int32{12, 0, 5, 5, 3}
	g := e.ops.Alloc(len(rows), 77)
	e.ops.GatherRows(g, bt, e.ints(rows))
	wantG := kernels.NewMat(make([]float32, len(rows)*77), len(rows), 77)
	for i, r := range rows {
		copy(wantG.Row(i), b.Row(int(r)))
	}
	cudatest.SameBits(t, "GatherRows", e.down(g), wantG)

	table := gpuRandMat(rng, 50, 24, 1)
	tokens, pos := []int32{3, 49, 0, 3, 17}, []int32{0, 1, 2, 0, 9}
	for _, zero := range []bool{false, true} {
		emb := e.ops.Alloc(len(tokens), 24)
		e.ops.Embed(emb, e.up(table), e.ints(tokens), e.ints(pos), zero)
		wantE := kernels.NewMat(make([]float32, len(tokens)*24), len(tokens), 24)
		for i, tok := range tokens {
			if !zero || pos[i] != 0 {
				copy(wantE.Row(i), table.Row(int(tok)))
			}
		}
		cudatest.SameBits(t, "Embed", e.down(emb), wantE)
	}
}

func TestDeviceSigmoidAndRoPEAreWithinRounding(t *testing.T) {
	e := gpuEnv{t, gpuOps(t)}
	rng := rand.New(rand.NewPCG(9, 10))
	x := gpuRandMat(rng, 5, 300, 4)
	s := e.ops.Alloc(5, 300)
	e.ops.Sigmoid(s, e.up(x))
	got := e.down(s)
	for i, v := range x.Data {
		ref := 1 / (1 + math.Exp(-float64(v)))
		if d := math.Abs(float64(got.Data[i]) - ref); !(d <= 1e-6*ref) {
			t.Errorf("Sigmoid(%g) = %g, want %g within 1e-6 relative", v, got.Data[i], ref)
		}
	}

	const dim, maxPos = 16, 4096
	rope := kernels.NewRope(dim, maxPos, 1e6)
	r := e.ops.UploadRope(rope)
	cos, sin := rope.Tables()
	q := gpuRandMat(rng, 6, 3*dim, 1)
	pos := []int32{0, 1, 7, 100, 4095, 2048}
	qt := e.up(q)
	e.ops.RoPE(qt.Slice(0, 6, dim, 2*dim), e.ints(pos), r) // the middle head only
	got = e.down(qt)
	for i, p := range pos {
		for c := range 3 * dim {
			want, bound := float64(q.Row(i)[c]), 0.0
			if c >= dim && c < 2*dim {
				j := (c - dim) / 2
				cs, sn := float64(cos[int(p)*dim/2+j]), float64(sin[int(p)*dim/2+j])
				a, b := float64(q.Row(i)[dim+2*j]), float64(q.Row(i)[dim+2*j+1])
				if c%2 == 0 {
					want = a*cs - b*sn
				} else {
					want = a*sn + b*cs
				}
				bound = 3 * gpuU * (math.Abs(a*cs) + math.Abs(b*sn) + math.Abs(a*sn) + math.Abs(b*cs))
			}
			if d := math.Abs(float64(got.Row(i)[c]) - want); !(d <= bound) {
				t.Errorf("RoPE row %d (pos %d) col %d = %g, want %g within %g", i, p, c, got.Row(i)[c], want, bound)
			}
		}
	}
}

func TestDeviceWriteKVWritesEachRowIntoItsSlot(t *testing.T) {
	e := gpuEnv{t, gpuOps(t)}
	rng := rand.New(rand.NewPCG(11, 12))
	const slots, rank, dr, di, T = 40, 16, 4, 8, 5
	kv := KVLayer{MLA: e.ops.Alloc(slots, rank+dr), Index: e.ops.Alloc(di, slots), Rank: rank}
	c, kpe, ik := gpuRandMat(rng, T, rank, 1), gpuRandMat(rng, T, dr, 1), gpuRandMat(rng, T, di, 1)
	// kpe is a column view, as the model's k_rope is of kv_a's output.
	wide := gpuRandMat(rng, T, rank+dr, 1)
	for i := range T {
		copy(wide.Row(i)[rank:], kpe.Row(i))
	}
	at := []int32{7, 0, 39, 12, 13}
	e.ops.WriteKV(kv, e.up(c), e.up(wide).Slice(0, T, rank, rank+dr), e.up(ik), e.ints(at))
	wantM := kernels.NewMat(make([]float32, slots*(rank+dr)), slots, rank+dr)
	wantI := kernels.NewMat(make([]float32, di*slots), di, slots)
	for r, s := range at {
		copy(wantM.Row(int(s)), c.Row(r))
		copy(wantM.Row(int(s))[rank:], kpe.Row(r))
		for d := range di {
			wantI.Row(d)[s] = ik.Row(r)[d]
		}
	}
	cudatest.SameBits(t, "WriteKV's MLA pool", e.down(kv.MLA), wantM)
	cudatest.SameBits(t, "WriteKV's index keys", e.down(kv.Index), wantI)
}

// gpuAttendRef is absorbed attention in float64 for row t, head h, with
// its error bound: logits within scale·dk·2⁻²⁴·Σ|q||k| move each p by at
// most twice the largest such error, relatively; the weighted sum adds
// (n+4)·2⁻²⁴ of max|v|; 1e-6 of max|v| is the softmax's own allowance.
func gpuAttendRef(q []float32, mla kernels.Mat, rank int, rows []int32, scale float32) (out []float64, bound float64) {
	n := len(rows)
	logit := make([]float64, n)
	var mx, maxErr, maxV float64 = math.Inf(-1), 0, 0
	for i, s := range rows {
		k := mla.Row(int(s))
		var dot, abs float64
		for d, qv := range q {
			dot += float64(qv) * float64(k[d])
			abs += math.Abs(float64(qv) * float64(k[d]))
		}
		logit[i] = float64(scale) * dot
		mx = max(mx, logit[i])
		maxErr = max(maxErr, float64(scale)*float64(len(q))*gpuU*abs+gpuU*math.Abs(logit[i]))
		for _, v := range k[:rank] {
			maxV = max(maxV, math.Abs(float64(v)))
		}
	}
	var sum float64
	for i := range logit {
		logit[i] = math.Exp(logit[i] - mx)
		sum += logit[i]
	}
	out = make([]float64, rank)
	for i, s := range rows {
		for d, v := range mla.Row(int(s))[:rank] {
			out[d] += logit[i] / sum * float64(v)
		}
	}
	return out, maxV * (2*maxErr + float64(n+4)*gpuU + 1e-6)
}

// gpuRandExperts picks, for each of T rows, K distinct experts of N at random.
func gpuRandExperts(rng *rand.Rand, T, N, K int) []int32 {
	idx := make([]int32, T*K)
	for r := range T {
		for i, ex := range rng.Perm(N)[:K] {
			idx[r*K+i] = int32(ex)
		}
	}
	return idx
}

// gpuSelection uploads per-row slot lists as a Selection of topK.
func gpuSelection(e gpuEnv, lists [][]int32, topK int) Selection {
	picked, count := make([]int32, len(lists)*topK), make([]int32, len(lists))
	for r, l := range lists {
		copy(picked[r*topK:], l)
		count[r] = int32(len(l))
	}
	return Selection{Picked: e.ints(picked), Count: e.ints(count), TopK: topK}
}

func TestDeviceAttendIsWithinItsSoftmaxBound(t *testing.T) {
	e := gpuEnv{t, gpuOps(t)}
	rng := rand.New(rand.NewPCG(13, 14))
	const slots, rank, dr, heads, topK, T = 300, 64, 16, 4, 64, 9
	dk := rank + dr
	mla := gpuRandMat(rng, slots, dk, 1)
	q := gpuRandMat(rng, T, heads*dk, 1)
	lists := make([][]int32, T)
	for r := range T {
		n := []int{1, 2, 5, 64, 64, 33, 17, 64, 3}[r]
		perm := rng.Perm(slots)[:n]
		l := make([]int32, n)
		for i, s := range perm {
			l[i] = int32(s)
		}
		lists[r] = l
	}
	kv := KVLayer{MLA: e.up(mla), Index: e.ops.Alloc(1, slots), Rank: rank}
	o := e.ops.Alloc(T, heads*rank)
	scale := float32(1 / math.Sqrt(float64(dk)))
	e.ops.Attend(o, e.up(q), kv, gpuSelection(e, lists, topK), heads, scale)
	got := e.down(o)
	for r := range T {
		for h := range heads {
			ref, bound := gpuAttendRef(q.Row(r)[h*dk:(h+1)*dk], mla, rank, lists[r], scale)
			for d, want := range ref {
				if g := float64(got.Row(r)[h*rank+d]); !(math.Abs(g-want) <= bound) {
					t.Errorf("Attend row %d head %d [%d] = %g, want %g within %g", r, h, d, g, want, bound)
				}
			}
		}
	}
}

// gpuSwiGLURef is silu(x·gateᵀ) ⊙ (x·upᵀ) · downᵀ for one row in float64,
// with the bound that propagates each Linear's k·2⁻²⁴·Σ|x||w| through
// silu (|silu'| < 1.1) and the product (a few roundings of h), doubled
// for the second-order terms and expf's ulps.
func gpuSwiGLURef(x []float32, gate, up, down kernels.Mat) (out, bound []float64) {
	H, I := len(x), gate.Rows
	h, dh := make([]float64, I), make([]float64, I)
	for j := range I {
		var g, u, ag, au float64
		for c, v := range x {
			g += float64(v) * float64(gate.Row(j)[c])
			u += float64(v) * float64(up.Row(j)[c])
			ag += math.Abs(float64(v) * float64(gate.Row(j)[c]))
			au += math.Abs(float64(v) * float64(up.Row(j)[c]))
		}
		silu := g / (1 + math.Exp(-g))
		h[j] = silu * u
		dh[j] = math.Abs(silu)*float64(H)*gpuU*au + math.Abs(u)*1.1*float64(H)*gpuU*ag + 8*gpuU*math.Abs(h[j])
	}
	out, bound = make([]float64, down.Rows), make([]float64, down.Rows)
	for i := range down.Rows {
		var abs, prop float64
		for j, hv := range h {
			dv := float64(down.Row(i)[j])
			out[i] += hv * dv
			abs += math.Abs(hv * dv)
			prop += math.Abs(dv) * dh[j]
		}
		bound[i] = 2 * (float64(I)*gpuU*abs + prop)
	}
	return out, bound
}

func TestDeviceSwiGLUAndExpertsAreWithinTheirLinearsBound(t *testing.T) {
	e := gpuEnv{t, gpuOps(t)}
	rng := rand.New(rand.NewPCG(15, 16))
	const T, H, I = 7, 64, 128
	x := gpuRandMat(rng, T, H, 1)
	gate, up, down := gpuRandMat(rng, I, H, 0.125), gpuRandMat(rng, I, H, 0.125), gpuRandMat(rng, H, I, 0.09)
	dst := e.ops.Alloc(T, H)
	xt := e.up(x)
	e.ops.SwiGLU(dst, xt, MLP{Gate: e.up(gate), Up: e.up(up), Down: e.up(down)})
	got := e.down(dst)
	for r := range T {
		ref, bound := gpuSwiGLURef(x.Row(r), gate, up, down)
		for i := range H {
			if d := math.Abs(float64(got.Row(r)[i]) - ref[i]); !(d <= bound[i]) {
				t.Errorf("SwiGLU [%d,%d] = %g, want %g within %g", r, i, got.Row(r)[i], ref[i], bound[i])
			}
		}
	}

	const N, K, inter = 12, 3, 16
	eg, eu, ed := gpuRandMat(rng, N*inter, H, 0.125), gpuRandMat(rng, N*inter, H, 0.125), gpuRandMat(rng, N*H, inter, 0.25)
	idx := gpuRandExperts(rng, T, N, K)
	w := gpuRandMat(rng, T, K, 0.5)
	r := Routing{Idx: e.ints(idx), W: e.up(w), K: K}
	results := e.ops.Alloc(T*K, H)
	e.ops.Experts(results, xt, Experts{Gate: e.up(eg), Up: e.up(eu), Down: e.up(ed), N: N, Inter: inter}, r)
	gotR := e.down(results)
	for r := range T {
		for i := range K {
			ex := int(idx[r*K+i])
			ref, bound := gpuSwiGLURef(x.Row(r), eg.Slice(ex*inter, (ex+1)*inter, 0, H), eu.Slice(ex*inter, (ex+1)*inter, 0, H), ed.Slice(ex*H, (ex+1)*H, 0, inter))
			for c := range H {
				if d := math.Abs(float64(gotR.Row(r*K + i)[c]) - ref[c]); !(d <= bound[c]) {
					t.Errorf("Experts row %d rank %d (expert %d) [%d] = %g, want %g within %g", r, i, ex, c, gotR.Row(r*K + i)[c], ref[c], bound[c])
				}
			}
		}
	}

	// Combine adds each weighted result in rank order, each product rounded.
	out := gpuRandMat(rng, T, H, 1)
	ot := e.up(out)
	e.ops.Combine(ot, results, r)
	for r := range T {
		for c := range H {
			for i := range K {
				out.Row(r)[c] += float32(w.Row(r)[i] * gotR.Row(r*K + i)[c])
			}
		}
	}
	cudatest.SameBits(t, "Combine", e.down(ot), out)
}

// gpuRouteInputs are T rows of router scores in (0, 1) and a bias. With
// distinct, every biased score and every group's top-2 sum differs from
// the others by more than 1e-5 (far above float32's rounding near 1);
// otherwise scores are multiples of 1/8 and the bias is 0, so there are
// exact ties, which must break toward the lower index as the CPU's do.
func gpuRouteInputs(rng *rand.Rand, T, N, groups int, distinct bool) (scores, bias kernels.Mat) {
	scores, bias = kernels.NewMat(make([]float32, T*N), T, N), kernels.NewMat(make([]float32, N), 1, N)
	if !distinct {
		for i := range scores.Data {
			scores.Data[i] = float32(1+rng.IntN(7)) / 8
		}
		return scores, bias
	}
	for i := range bias.Data {
		bias.Data[i] = float32(0.05 * rng.NormFloat64())
	}
	per := N / groups
	for r := range T {
		for {
			row := scores.Row(r)
			for i := range row {
				row[i] = float32(1 / (1 + math.Exp(-2*rng.NormFloat64())))
			}
			vals := make([]float64, 0, N+groups)
			for g := range groups {
				c := make([]float64, per)
				for i := range c {
					c[i] = float64(row[g*per+i] + bias.Data[g*per+i])
				}
				vals = append(vals, c...)
				slices.Sort(c)
				vals = append(vals, 10+c[per-1]+c[per-2]) // +10 keeps sums apart from scores
			}
			slices.Sort(vals)
			ok := true
			for i := 1; i < len(vals); i++ {
				ok = ok && vals[i]-vals[i-1] > 1e-5
			}
			if ok {
				break
			}
		}
	}
	return scores, bias
}

func TestDeviceRouteChoosesTheHostsExperts(t *testing.T) {
	dev := gpuEnv{t, gpuOps(t)}
	host := gpuEnv{t, NewHostOps(kernels.Default())}
	rng := rand.New(rand.NewPCG(17, 18))
	for _, c := range []struct {
		name     string
		N        int
		rc       RouteConfig
		distinct bool
	}{
		{"nano's four groups keeping two", 16, RouteConfig{Groups: 4, TopKGroup: 2, K: 4, Scaling: 2.5, NormTopK: true}, true},
		{"tiny's 256 experts in one group", 256, RouteConfig{Groups: 1, TopKGroup: 1, K: 8, Scaling: 2.5, NormTopK: true}, true},
		{"eight groups without normalising", 64, RouteConfig{Groups: 8, TopKGroup: 3, K: 6, Scaling: 1, NormTopK: false}, true},
		{"exact ties break toward the lower index", 64, RouteConfig{Groups: 8, TopKGroup: 3, K: 6, Scaling: 2.5, NormTopK: true}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			const T = 33
			scores, bias := gpuRouteInputs(rng, T, c.N, c.rc.Groups, c.distinct)
			var idx [2][]int32
			var w [2]kernels.Mat
			for i, e := range []gpuEnv{dev, host} {
				r := Routing{Idx: e.ops.AllocInts(T * c.rc.K), W: e.ops.Alloc(T, c.rc.K), K: c.rc.K}
				e.ops.Route(r, e.up(scores), e.up(bias), c.rc)
				idx[i], w[i] = e.downInts(r.Idx), e.down(r.W)
			}
			if !slices.Equal(idx[0], idx[1]) {
				for t2 := range T {
					if a, b := idx[0][t2*c.rc.K:(t2+1)*c.rc.K], idx[1][t2*c.rc.K:(t2+1)*c.rc.K]; !slices.Equal(a, b) {
						t.Errorf("row %d: the device routes to %v, the host to %v", t2, a, b)
					}
				}
				return
			}
			for i, v := range w[0].Data {
				if ref := float64(w[1].Data[i]); !(math.Abs(float64(v)-ref) <= 1e-6*math.Abs(ref)) {
					t.Errorf("weight %d = %g, the host's %g", i, v, ref)
				}
			}
		})
	}
}

// gpuBatch lays out seqs as a Batch in e's memory (and the host's lists).
func gpuBatch(e gpuEnv, seqs []SeqView) Batch {
	var rs, rp, rsl, ss []int32
	so := []int32{0}
	for j, s := range seqs {
		for i := range s.N {
			rs, rp, rsl = append(rs, int32(j)), append(rp, int32(s.Pos+i)), append(rsl, s.Slots[s.Pos+i])
		}
		ss = append(ss, s.Slots[:s.Pos+s.N]...)
		so = append(so, int32(len(ss)))
	}
	return Batch{
		T: len(rs), RowSeq: e.ints(rs), RowPos: e.ints(rp), RowSlot: e.ints(rsl), SeqSlots: e.ints(ss), SeqOff: e.ints(so),
		Host: HostBatch{RowSeq: rs, RowPos: rp, RowSlot: rsl, SeqSlots: ss, SeqOff: so, Seqs: seqs},
	}
}

// gpuScatteredSlots gives n positions slots on shuffled pages of 16.
func gpuScatteredSlots(rng *rand.Rand, pages []int, n int) []int32 {
	out := make([]int32, n)
	for p := range n {
		out[p] = int32(pages[p/16]*16 + p%16)
	}
	return out
}

// gpuSelectRef is SelectKeys in float64 for every row of b: the slots in
// position order, and whether each DSA row's TopK-th and next scores lie
// further apart than four times their rounding bound (so float32 cannot
// reorder them).
func gpuSelectRef(index, iq, iw kernels.Mat, b Batch, topK int) (lists [][]int32, clear bool) {
	heads, dim := iw.Cols, index.Rows
	clear = true
	for r := range b.T {
		s := b.Host.Seqs[b.Host.RowSeq[r]]
		p := int(b.Host.RowPos[r])
		if p+1 <= topK {
			lists = append(lists, slices.Clone(s.Slots[:p+1]))
			continue
		}
		type cand struct {
			pos        int
			score, err float64
		}
		cs := make([]cand, p+1)
		for pos := range p + 1 {
			slot := int(s.Slots[pos])
			var sc, bound float64
			for h := range heads {
				var dot, abs float64
				for d := range dim {
					v := float64(iq.Row(r)[h*dim+d]) * float64(index.Row(d)[slot])
					dot += v
					abs += math.Abs(v)
				}
				wv := float64(iw.Row(r)[h])
				sc += wv * max(dot, 0)
				bound += math.Abs(wv) * (float64(dim)*gpuU*abs + float64(heads)*gpuU*max(dot, 0))
			}
			cs[pos] = cand{pos, sc, 2 * bound}
		}
		slices.SortStableFunc(cs, func(a, b cand) int {
			switch {
			case a.score > b.score:
				return -1
			case a.score < b.score:
				return 1
			}
			return 0
		})
		if gap := cs[topK-1].score - cs[topK].score; !(gap > 4*max(cs[topK-1].err, cs[topK].err)) {
			clear = false
		}
		pos := make([]int, topK)
		for i := range topK {
			pos[i] = cs[i].pos
		}
		slices.Sort(pos)
		l := make([]int32, topK)
		for i, q := range pos {
			l[i] = s.Slots[q]
		}
		lists = append(lists, l)
	}
	return lists, clear
}

func TestDeviceSelectKeysPicksTheExactTopK(t *testing.T) {
	dev := gpuEnv{t, gpuOps(t)}
	host := gpuEnv{t, NewHostOps(kernels.Default())}
	for _, c := range []struct {
		name             string
		topK, heads, dim int
		seqs             [][2]int // N new tokens at Pos
	}{
		{"top-8 over short and long sequences", 8, 4, 32, [][2]int{{5, 0}, {3, 30}, {40, 100}, {4, 6}}},
		{"tiny's top-64 over 300 keys", 64, 4, 32, [][2]int{{1, 299}, {20, 60}, {2, 62}, {1, 150}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const pages = 64
			var seqs []SeqView
			var index, iq, iw kernels.Mat
			var want [][]int32
			for seed := uint64(0); ; seed++ {
				if seed == 50 {
					t.Fatal("no inputs without near ties in 50 seeds")
				}
				rng := rand.New(rand.NewPCG(19, seed))
				perm := rng.Perm(pages)
				seqs = seqs[:0]
				used := 0
				for _, s := range c.seqs {
					n := s[0] + s[1]
					np := (n + 15) / 16
					seqs = append(seqs, SeqView{N: s[0], Pos: s[1], Slots: gpuScatteredSlots(rng, perm[used:used+np], n)})
					used += np
				}
				index = gpuRandMat(rng, c.dim, pages*16, 1)
				T := 0
				for _, s := range seqs {
					T += s.N
				}
				iq, iw = gpuRandMat(rng, T, c.heads*c.dim, 1), gpuRandMat(rng, T, c.heads, 0.3)
				var ok bool
				if want, ok = gpuSelectRef(index, iq, iw, gpuBatch(host, seqs), c.topK); ok {
					break
				}
			}
			for _, e := range []gpuEnv{dev, host} {
				b := gpuBatch(e, seqs)
				kv := KVLayer{MLA: e.ops.Alloc(pages*16, 1), Index: e.up(index), Rank: 1}
				sel := Selection{Picked: e.ops.AllocInts(b.T * c.topK), Count: e.ops.AllocInts(b.T), TopK: c.topK}
				e.ops.SelectKeys(sel, kv, e.up(iq), e.up(iw), b)
				picked, count := e.downInts(sel.Picked), e.downInts(sel.Count)
				for t2 := range b.T {
					got := picked[t2*c.topK : t2*c.topK+int(count[t2])]
					if !slices.Equal(got, want[t2]) {
						t.Errorf("%s row %d (pos %d): picked %v, want %v", e.ops.Name(), t2, b.Host.RowPos[t2], got, want[t2])
					}
				}
			}
			// TODO(device): also check the device's top-k against a brute-force
			// top-k of its own scores, once the kernels expose them.
		})
	}
}

func TestDeviceARowAloneEqualsTheSameRowInABatchOf64(t *testing.T) {
	e := gpuEnv{t, gpuOps(t)}
	rng := rand.New(rand.NewPCG(21, 22))
	const B, row, H = 64, 17, 256
	x := gpuRandMat(rng, B, H, 1)
	alone := kernels.NewMat(slices.Clone(x.Row(row)), 1, H)
	xt, at := e.up(x), e.up(alone)

	w := gpuRandMat(rng, 1000, H, 0.06)
	wt := e.up(w)
	yb, ya := e.ops.Alloc(B, 1000), e.ops.Alloc(1, 1000)
	e.ops.MatMulT(yb, xt, wt)
	e.ops.MatMulT(ya, at, wt)
	cudatest.SameBits(t, "MatMulT", e.down(ya), e.down(yb).Slice(row, row+1, 0, 1000))

	nw := e.up(gpuRandMat(rng, 1, H, 1))
	nb, na := e.ops.Alloc(B, H), e.ops.Alloc(1, H)
	e.ops.RMSNorm(nb, xt, nw, 1e-5)
	e.ops.RMSNorm(na, at, nw, 1e-5)
	cudatest.SameBits(t, "RMSNorm", e.down(na), e.down(nb).Slice(row, row+1, 0, H))

	const slots, rank, dr, heads, topK = 512, 64, 16, 4, 64
	dk := rank + dr
	kv := KVLayer{MLA: e.up(gpuRandMat(rng, slots, dk, 1)), Index: e.ops.Alloc(1, slots), Rank: rank}
	q := gpuRandMat(rng, B, heads*dk, 1)
	lists := make([][]int32, B)
	for r := range B {
		l := make([]int32, 0, topK)
		for _, s := range rng.Perm(slots)[:1+rng.IntN(topK)] {
			l = append(l, int32(s))
		}
		slices.Sort(l)
		lists[r] = l
	}
	ob, oa := e.ops.Alloc(B, heads*rank), e.ops.Alloc(1, heads*rank)
	e.ops.Attend(ob, e.up(q), kv, gpuSelection(e, lists, topK), heads, 0.1)
	e.ops.Attend(oa, e.up(kernels.NewMat(slices.Clone(q.Row(row)), 1, heads*dk)), kv, gpuSelection(e, lists[row:row+1], topK), heads, 0.1)
	cudatest.SameBits(t, "Attend", e.down(oa), e.down(ob).Slice(row, row+1, 0, heads*rank))

	const N, K, inter = 32, 8, 64
	ex := Experts{Gate: e.up(gpuRandMat(rng, N*inter, H, 0.06)), Up: e.up(gpuRandMat(rng, N*inter, H, 0.06)),
		Down: e.up(gpuRandMat(rng, N*H, inter, 0.125)), N: N, Inter: inter}
	idx := gpuRandExperts(rng, B, N, K)
	wts := gpuRandMat(rng, B, K, 0.3)
	rb := Routing{Idx: e.ints(idx), W: e.up(wts), K: K}
	ra := Routing{Idx: e.ints(idx[row*K : (row+1)*K]), W: e.up(kernels.NewMat(slices.Clone(wts.Row(row)), 1, K)), K: K}
	eb, ea := e.ops.Alloc(B*K, H), e.ops.Alloc(K, H)
	e.ops.Experts(eb, xt, ex, rb)
	e.ops.Experts(ea, at, ex, ra)
	cudatest.SameBits(t, "Experts", e.down(ea), e.down(eb).Slice(row*K, (row+1)*K, 0, H))
}

// gpuExecutor opens a fresh device Ops (the executor closes it) and an
// executor over it for cfg and w.
func gpuExecutor(t testing.TB, cfg *model.Config, w *model.Weights, pages, pageSize int) *Executor {
	t.Helper()
	ops, err := OpenDevice(DeviceOptions{})
	if errors.Is(err, ErrNoDevice) {
		gpuMissing(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ex, err := NewExecutor(cfg, w, ops, pages, pageSize, true)
	if err != nil {
		ops.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ex.Close(); err != nil {
			t.Error(err)
		}
	})
	return ex
}

func TestDeviceForwardAndGreedyDecodingMatchTheCPUModel(t *testing.T) {
	for _, name := range []string{"nano", "tiny"} {
		t.Run(name, func(t *testing.T) {
			gpuOps(t) // skips before the weights are made when there is no GPU
			cfg, err := model.Preset(name)
			if err != nil {
				t.Fatal(err)
			}
			w := model.Synth(cfg, 7)
			const pages, pageSize = 128, 16
			ex := gpuExecutor(t, cfg, w, pages, pageSize)
			cpu := model.New(cfg, w, kernels.Default(), model.NewKVCache(cfg, pages, pageSize))
			// Prompts of 5, 70 and 130 tokens: dense attention, and DSA past
			// index_topk; 64 greedy steps each.
			cudatest.Greedy{Lens: []int{5, 70, 130}, Steps: 64, Rel: 1e-4, Seed: 23}.Check(t, ex, cpu)
		})
	}
}

func TestDevicePackPassesAnAllocationsAddressPlusFourBytesPerElement(t *testing.T) {
	d := &gpuDevice{}
	m := &gpuMem{ptr: 0x7f0000001000, n: 100}
	got := d.pack(nil, "k", []Arg{Ptr(m, 0), Int(-7), Ptr(m, 37), Float(0.25), Ptr(nil, 0), Ptr(m, 100)})
	want := []cuda.Param{
		{Kind: cuda.Pointer, Ptr: 0x7f0000001000},
		{Kind: cuda.Int32, I: -7},
		{Kind: cuda.Pointer, Ptr: 0x7f0000001000 + 4*37},
		{Kind: cuda.Float32, F: 0.25},
		{Kind: cuda.Pointer, Ptr: 0},
		{Kind: cuda.Pointer, Ptr: 0x7f0000001000 + 400},
	}
	if !slices.Equal(got, want) || d.err != nil {
		t.Errorf("pack = %+v (err %v)\nwant   %+v", got, d.err, want)
	}
	// Freed memory is the sticky error, not a NULL that would fault the GPU.
	d.pack(nil, "k", []Arg{Ptr(&gpuMem{n: 4}, 0)})
	if d.err == nil || !strings.Contains(d.err.Error(), "after Free") {
		t.Errorf("packing freed memory: Err() = %v, want use after Free", d.err)
	}
}

func TestDeviceMemoryOutsideAnAllocationPanics(t *testing.T) {
	d := &gpuDevice{}
	m := &gpuMem{ptr: 0x1000, n: 10}
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"an upload past the end", func() { d.UploadF32(m, 8, make([]float32, 3)) }},
		{"a download at a negative offset", func() { d.DownloadI32(make([]int32, 1), m, -1) }},
		{"a pointer argument past the end", func() { d.pack(nil, "k", []Arg{Ptr(m, 11)}) }},
		{"another Ops' memory", func() { d.UploadF32(gpuForeignMem{}, 0, nil) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			c.f()
		})
	}
}

// gpuForeignMem is a Mem that is not device memory.
type gpuForeignMem struct{}

func (gpuForeignMem) Len() int { return 0 }
