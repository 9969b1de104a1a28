package model

import (
	"math"
	mrand "math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/glmbench/glmbench/kernels"
)

func TestRoundBF16RoundsToNearestEven(t *testing.T) {
	t.Parallel()
	f := math.Float32frombits
	for _, c := range []struct {
		name    string
		in, out uint32 // float32 bits
	}{
		{"one stays", 0x3f80_0000, 0x3f80_0000},
		{"below half a unit rounds down", 0x3f80_7fff, 0x3f80_0000},
		{"a tie rounds down to the even 0x3f80", 0x3f80_8000, 0x3f80_0000},
		{"a tie rounds up to the even 0x3f82", 0x3f81_8000, 0x3f82_0000},
		{"past half a unit rounds up", 0x3f80_8001, 0x3f81_0000},
		{"negative ties go to even too", 0xbf81_8000, 0xbf82_0000},
		{"the largest finite bfloat16 stays", 0x7f7f_0000, 0x7f7f_0000},
		{"float32's largest finite rounds to +Inf", 0x7f7f_ffff, 0x7f80_0000},
		{"+Inf stays", 0x7f80_0000, 0x7f80_0000},
		{"a subnormal tie rounds down to the even 0", 0x0000_8000, 0x0000_0000},
		{"a subnormal tie rounds up to the even 0x0002", 0x0001_8000, 0x0002_0000},
		{"a subnormal past the tie rounds up", 0x0000_8001, 0x0001_0000},
		{"-0 stays -0", 0x8000_0000, 0x8000_0000},
	} {
		if got := math.Float32bits(RoundBF16(f(c.in))); got != c.out {
			t.Errorf("%s: RoundBF16(%#08x) = %#08x, want %#08x", c.name, c.in, got, c.out)
		}
	}
	// A NaN whose payload lies in the low 16 bits would truncate to Inf.
	for _, nan := range []uint32{0x7fc0_0000, 0x7f80_0001, 0xff80_0001} {
		if got := RoundBF16(f(nan)); got == got {
			t.Errorf("RoundBF16(NaN %#08x) = %v, want NaN", nan, got)
		}
	}
}

func TestE4M3DecodesAll256Codes(t *testing.T) {
	t.Parallel()
	// Known values: OCP FP8 spec, E4M3 column.
	for c, want := range map[uint8]float64{
		0x00: 0, 0x01: 0x1p-9, 0x07: 7 * 0x1p-9, 0x08: 0x1p-6, 0x38: 1, 0x39: 1.125,
		0x3f: 1.875, 0x40: 2, 0x7e: 448, 0x77: 240, 0xb8: -1, 0xfe: -448, 0x81: -0x1p-9,
	} {
		if got := float64(DecodeE4M3(c)); got != want {
			t.Errorf("DecodeE4M3(%#02x) = %v, want %v", c, got, want)
		}
	}
	finite, nans := 0, 0
	for c := range 256 {
		v := float64(DecodeE4M3(uint8(c)))
		switch {
		case math.IsNaN(v):
			nans++
			if c != 0x7f && c != 0xff {
				t.Errorf("code %#02x is NaN; only 0x7f and 0xff are", c)
			}
			continue
		case math.IsInf(v, 0) || math.Abs(v) > 448:
			t.Errorf("code %#02x = %v: e4m3fn has no value past 448", c, v)
		}
		finite++
		// Each finite code is its own value's code: the round trip is exact.
		if back := EncodeE4M3(v); back != uint8(c) { // -0 included: 0x80
			t.Errorf("EncodeE4M3(%v) = %#02x, want %#02x", v, back, c)
		}
		if c < 0x7e && c&0x80 == 0 && !(float64(DecodeE4M3(uint8(c+1))) > v) {
			t.Errorf("codes %#02x, %#02x do not increase", c, c+1)
		}
	}
	if finite != 254 || nans != 2 {
		t.Errorf("%d finite codes, %d NaNs; want 254 and 2", finite, nans)
	}
}

func TestE4M3RoundsMidpointsToEvenAndSaturates(t *testing.T) {
	t.Parallel()
	// Between each pair of neighbouring codes, the midpoint goes to the even
	// one, and anything off the midpoint to the nearer one.
	for c := uint8(0); c < 0x7e; c++ {
		lo, hi := float64(DecodeE4M3(c)), float64(DecodeE4M3(c+1))
		mid := (lo + hi) / 2
		even := c
		if c%2 == 1 {
			even = c + 1
		}
		if got := EncodeE4M3(mid); got != even {
			t.Errorf("midpoint %v of %#02x and %#02x → %#02x, want the even %#02x", mid, c, c+1, got, even)
		}
		if got := EncodeE4M3(-mid); got != 0x80|even {
			t.Errorf("midpoint %v → %#02x, want %#02x", -mid, got, 0x80|even)
		}
		if got := EncodeE4M3(math.Nextafter(mid, lo)); got != c {
			t.Errorf("just below midpoint %v → %#02x, want %#02x", mid, got, c)
		}
		if got := EncodeE4M3(math.Nextafter(mid, hi)); got != c+1 {
			t.Errorf("just above midpoint %v → %#02x, want %#02x", mid, got, c+1)
		}
	}
	for _, c := range []struct {
		x    float64
		want uint8
	}{
		{449, 0x7e}, {464, 0x7e}, {1e30, 0x7e}, {math.Inf(1), 0x7e}, {-500, 0xfe}, {math.Inf(-1), 0xfe},
		{math.NaN(), 0x7f}, {math.Copysign(0, -1), 0x80}, {0x1p-11, 0x00}, {0x1p-10 * 1.0001, 0x01},
	} {
		if got := EncodeE4M3(c.x); got != c.want {
			t.Errorf("EncodeE4M3(%v) = %#02x, want %#02x", c.x, got, c.want)
		}
	}
}

func TestRoundE2M1TiesToEven(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]float64{
		{0, 0}, {0.25, 0}, {0.26, 0.5}, {0.75, 1}, {1.25, 1}, {1.75, 2}, {2.5, 2}, {3.5, 4}, {5, 4},
		{5.01, 6}, {6, 6}, {7, 6}, {100, 6}, {-0.75, -1}, {-5, -4}, {-9, -6}, {3, 3}, {1.5, 1.5},
	} {
		if got := RoundE2M1(c[0]); got != c[1] {
			t.Errorf("RoundE2M1(%v) = %v, want %v", c[0], got, c[1])
		}
	}
}

func TestNVFP4OfHandMadeBlocks(t *testing.T) {
	t.Parallel()
	// One row of two blocks. Block 0 holds the tensor's amax 2688 = 448·6, so
	// the tensor scale is exactly 1 and block 0's scale is 448: each x/448
	// rounds to E2M1, ties to even. Block 1's amax 81 wants the scale
	// 81/6 = 13.5, a tie between the E4M3 values 13 (code 0x55) and 14 (0x56):
	// it becomes 14, and 81/14 ≈ 5.79 rounds to 6 → 84.
	u := 448.0
	in := []float64{
		6 * u, 0, 0.25 * u, 0.75 * u, -1.25 * u, 2.5 * u, 3.5 * u, 5 * u,
		0.3 * u, 5.5 * u, -1.5 * u, 3 * u, -0.1 * u, 1.75 * u, 4 * u, -6 * u,
		81, 21, -35, 7, 3.5, 10.5, 49, -63, 0, 1, 28, -56, 42, 70, -84, 80,
	}
	want := []float64{
		6 * u, 0, 0, 1 * u, -1 * u, 2 * u, 4 * u, 4 * u,
		0.5 * u, 6 * u, -1.5 * u, 3 * u, 0, 2 * u, 4 * u, -6 * u,
		// x/14: 5.79→6, 1.5, -2.5→-2, 0.5, 0.25→0, 0.75→1, 3.5→4, -4.5→-4,
		// 0, 0.07→0, 2, -4, 3, 5→4, -6, 5.71→6
		84, 21, -28, 7, 0, 14, 56, -56, 0, 0, 28, -56, 42, 56, -84, 84,
	}
	data := make([]float32, len(in))
	for i, x := range in {
		data[i] = float32(x)
	}
	s, err := QuantizeNVFP4(data, 32)
	if err != nil || s != 1 {
		t.Fatalf("tensor scale %v, %v; want 1", s, err)
	}
	for i := range data {
		if float64(data[i]) != want[i] {
			t.Errorf("element %d (block %d): %v → %v, want %v", i, i/16, in[i], data[i], want[i])
		}
	}
	// Blocks run along the row: the same 32 values as two rows of 16 give
	// the same result.
	two := make([]float32, len(in))
	for i, x := range in {
		two[i] = float32(x)
	}
	if _, err := QuantizeNVFP4(two, 16); err != nil || !slices.Equal(two, data) {
		t.Errorf("2×16: %v (%v), want %v", two, err, data)
	}
	// A row of 20 is a block of 16 and a short one of 4 with its own
	// scale: 3/6 = 0.5 is E4M3-exact, and 3, 1.5, -0.75, 0.6 in units of
	// 0.5 are 6, 3, -1.5, 1.2 → 6, 3, -1.5, 1 (0.5).
	short := make([]float32, 20)
	for i := range 16 {
		short[i] = float32(in[i])
	}
	copy(short[16:], []float32{3, 1.5, -0.75, 0.6})
	if _, err := QuantizeNVFP4(short, 20); err != nil || !slices.Equal(short[:16], data[:16]) || !slices.Equal(short[16:], []float32{3, 1.5, -0.75, 0.5}) {
		t.Errorf("row of 20: %v (%v)", short, err)
	}
	if _, err := QuantizeNVFP4(make([]float32, 10), 3); err == nil {
		t.Error("10 elements as rows of 3: no error")
	}
	zeros := make([]float32, 32)
	if s, err := QuantizeNVFP4(zeros, 16); s != 0 || err != nil || slices.ContainsFunc(zeros, func(x float32) bool { return x != 0 }) {
		t.Errorf("zeros: scale %v, %v, %v", s, err, zeros)
	}
	if _, err := QuantizeNVFP4([]float32{1, float32(math.Inf(1))}, 2); err == nil {
		t.Error("an infinite weight: no error")
	}
}

func TestFP8ScaleMapsTheAmaxTo448(t *testing.T) {
	t.Parallel()
	// amax 3.5 = 448·2^-7, so the scale is exactly 2^-7. In units of it:
	// 100 lies midway between the E4M3 values 96 and 104 and goes to the even
	// code (96, 0x6c); 64 is exact; 1.5·2^-9 is a subnormal tie between codes
	// 1 and 2 and goes to 2 (2^-8).
	s7 := 0x1p-7
	data := []float32{-3.5, float32(100 * s7), float32(64 * s7), float32(1.5 * 0x1p-9 * s7), 0}
	s, err := QuantizeFP8(data)
	if err != nil || s != float32(s7) {
		t.Fatalf("scale %v, %v; want 2^-7", s, err)
	}
	want := []float32{-3.5, float32(96 * s7), float32(64 * s7), float32(0x1p-8 * s7), 0}
	if !slices.Equal(data, want) {
		t.Errorf("got %v, want %v", data, want)
	}
	if _, err := QuantizeFP8([]float32{1, float32(math.NaN())}); err == nil {
		t.Error("a NaN weight: no error")
	}
}

// randTensor is n Gaussian values of spread std, with a few 10σ outliers
// as real weights have.
func randTensor(seed uint64, n int, std float64) []float32 {
	rng := mrand.New(mrand.NewPCG(seed, 7))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(std * rng.NormFloat64())
		if i%997 == 0 {
			out[i] *= 10
		}
	}
	return out
}

func TestEachFormatStaysWithinItsErrorBound(t *testing.T) {
	t.Parallel()
	const rows, cols = 64, 256
	orig := randTensor(3, rows*cols, 0.02)
	worst := map[DType]float64{}
	for _, d := range []DType{BF16, FP8E4M3, NVFP4} {
		got := slices.Clone(orig)
		if err := RoundTensor(d, Tensor{Shape: []int{rows, cols}, Data: got}); err != nil {
			t.Fatal(err)
		}
		am, _ := amax(orig)
		var sum float64
		for i, x := range orig {
			x64, e := float64(x), math.Abs(float64(got[i])-float64(x))
			var bound float64
			switch d {
			case BF16: // half a unit of 8 significant bits
				bound = 0x1p-8 * math.Abs(x64)
			case FP8E4M3: // 4 significant bits; below 2^-6 (subnormal) half a step of 2^-9, in units of the scale
				s := am / 448
				bound = max(0x1p-4*math.Abs(x64), 0x1p-10*s)
			case NVFP4: // 2 significant bits, or half the 0.5 step of the block scale (≤ block amax/6·(1+2^-4))
				b0 := i / NVFP4Block * NVFP4Block
				bm, _ := amax(orig[b0 : b0+NVFP4Block])
				bound = max(0.25*math.Abs(x64), 0.25*bm/6*(1+0x1p-4))
			}
			if e > bound*(1+1e-6) {
				t.Fatalf("%s: element %d: %v → %v, error %.3g past the bound %.3g", d, i, x, got[i], e, bound)
			}
			if x != 0 {
				sum += e / math.Abs(x64)
			}
		}
		worst[d] = sum / float64(len(orig))
		t.Logf("%s: mean relative error %.3g", d, worst[d])
	}
	// The bounds are not loose everywhere: each format does round, and
	// fewer bits round more.
	if !(worst[BF16] > 0x1p-11 && worst[FP8E4M3] > 4*worst[BF16] && worst[NVFP4] > 2*worst[FP8E4M3]) {
		t.Errorf("mean relative errors %v: want bf16 > 2^-11 and each format well above the one before", worst)
	}
}

func TestQuantizeRoundsTheLinearWeightsOnly(t *testing.T) {
	t.Parallel()
	cfg, _ := Preset("nano")
	fresh := Synth(cfg, 1)
	var linears, kept []string
	for _, s := range Manifest(cfg) {
		if Quantized(s.Name) {
			linears = append(linears, s.Name)
		} else {
			kept = append(kept, s.Name)
		}
	}
	for _, name := range kept {
		ok := strings.Contains(name, "norm") || strings.HasSuffix(name, "bias") || name == "model.embed_tokens.weight" ||
			name == "lm_head.weight" || strings.HasSuffix(name, ".mlp.gate.weight") || strings.HasSuffix(name, "weights_proj.weight")
		if !ok {
			t.Errorf("%s kept in fp32: not an embedding, norm, bias, router, lm_head or weights_proj", name)
		}
	}
	for _, name := range linears {
		if strings.Contains(name, "norm") || strings.Contains(name, "bias") || strings.Contains(name, "embed") {
			t.Errorf("%s rounded", name)
		}
	}
	for _, d := range DTypes {
		w := Synth(cfg, 1)
		n, err := w.Quantize(d)
		if err != nil {
			t.Fatal(err)
		}
		changed := 0
		for name, t0 := range fresh.Tensors() {
			t1 := w.Tensors()[name]
			same := slices.EqualFunc(t0.Data, t1.Data, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) })
			switch {
			case !Quantized(name) && !same:
				t.Errorf("%s: %s changed", d, name)
			case Quantized(name) && d != FP32 && same:
				t.Errorf("%s: %s not rounded", d, name)
			case !same:
				changed++
			}
		}
		want := len(linears)
		if d == FP32 {
			want = 0 // fp32 is the checkpoint, bit for bit
		}
		if n != want || changed != want {
			t.Errorf("%s: Quantize says %d tensors, %d changed; want %d", d, n, changed, want)
		}
	}
	if _, err := Synth(cfg, 1).Quantize("int3"); err == nil || !strings.Contains(err.Error(), "fp32, bf16, fp8_e4m3, nvfp4") {
		t.Errorf("int3: %v", err)
	}
}

// driftFigures are how far a model's logits are from fp32's, over every
// position of some prompts (teacher-forced: the same tokens in both).
type driftFigures struct {
	meanAbs float64 // mean |Δlogit| over the whole vocabulary
	agree   float64 // share of positions whose argmax agrees
	kl      float64 // mean KL(p_fp32 ‖ p) in nats, over the whole vocabulary
	maxKL   float64 // the largest KL of a position
}

// drift compares the logits of cfg's seed-1 model with weights rounded to
// d (or, with seed ≠ 1, of another seed's fp32 model) to fp32's seed 1.
func drift(t *testing.T, cfg *Config, d DType, seed uint64, prompts [][]int32) driftFigures {
	t.Helper()
	ref := newTestModel(t, cfg, 1, 256)
	w := Synth(cfg, seed)
	if _, err := w.Quantize(d); err != nil {
		t.Fatal(err)
	}
	m := New(cfg, w, kernels.Default(), NewKVCache(cfg, 256, 4))
	var f driftFigures
	var n, same, pos int
	for _, p := range prompts {
		a, _ := prefillWhole(t, ref, p)
		b, _ := prefillWhole(t, m, p)
		for i := range a.Rows {
			ra, rb := a.Row(i), b.Row(i)
			la, lb := logSoftmax(ra), logSoftmax(rb)
			kl := 0.0
			for j := range ra {
				f.meanAbs += math.Abs(float64(ra[j] - rb[j]))
				kl += math.Exp(la[j]) * (la[j] - lb[j])
				n++
			}
			f.kl += kl
			f.maxKL = max(f.maxKL, kl)
			pos++
			if argmax(ra) == argmax(rb) {
				same++
			}
		}
	}
	f.meanAbs /= float64(n)
	f.kl /= float64(pos)
	f.agree = float64(same) / float64(pos)
	return f
}

// logSoftmax is log p of logits x, in float64.
func logSoftmax(x []float32) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, float64(v))
	}
	sum := 0.0
	for _, v := range x {
		sum += math.Exp(float64(v) - m)
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v) - m - math.Log(sum)
	}
	return out
}

func TestRoundedWeightsDriftTheLogitsByTheirPrecision(t *testing.T) {
	t.Parallel()
	cfg, _ := Preset("nano")
	var prompts [][]int32
	for s := range 6 {
		prompts = append(prompts, tokensN(48, s+1))
	}
	fig := map[DType]driftFigures{}
	for _, d := range DTypes {
		f := drift(t, cfg, d, 1, prompts)
		fig[d] = f
		t.Logf("nano seed 1, %d positions: %-8s mean |Δlogit| %.4g, argmax agreement %.3f, KL mean %.3g max %.3g nats", 6*48, d, f.meanAbs, f.agree, f.kl, f.maxKL)
	}
	// Another seed is another model: the verdict's "different model".
	other := drift(t, cfg, FP32, 2, prompts)
	t.Logf("nano seed 2 vs seed 1, %d positions: mean |Δlogit| %.4g, argmax agreement %.3f, KL mean %.3g max %.3g nats", 6*48, other.meanAbs, other.agree, other.kl, other.maxKL)
	if fig[FP32] != (driftFigures{agree: 1}) {
		t.Errorf("fp32 drifts: %+v", fig[FP32])
	}
	bf, f8, f4 := fig[BF16], fig[FP8E4M3], fig[NVFP4]
	if !(bf.meanAbs > 0 && f8.meanAbs > bf.meanAbs && f4.meanAbs > f8.meanAbs) || !(bf.kl > 0 && f8.kl > bf.kl && f4.kl > f8.kl) {
		t.Errorf("mean |Δlogit| and KL %+v: want 0 < bf16 < fp8 < nvfp4", fig)
	}
	if bf.agree < 0.95 || f4.agree < 0.5 {
		t.Errorf("argmax agreement %+v: want bf16 ≥ 0.95 and nvfp4 mostly the same", fig)
	}
	// The coarsest format is still nearer the model than another seed is.
	if !(other.kl > 4*f4.kl && other.agree < f4.agree) {
		t.Errorf("seed 2: KL %.3g, agreement %.3f; nvfp4: KL %.3g, agreement %.3f: want another model far further", other.kl, other.agree, f4.kl, f4.agree)
	}
}

// TestTinyDriftFigures logs the same figures for the tiny preset (about 4 s
// of CPU), run on demand: GLMBENCH_DRIFT_TINY=1 go test ./engine/model/
// -run TinyDrift -v.
func TestTinyDriftFigures(t *testing.T) {
	if os.Getenv("GLMBENCH_DRIFT_TINY") == "" {
		t.Skip("figures on demand: set GLMBENCH_DRIFT_TINY=1")
	}
	cfg, _ := Preset("tiny")
	var prompts [][]int32
	for s := range 6 {
		prompts = append(prompts, tokensN(48, s+1))
	}
	for _, d := range DTypes[1:] {
		f := drift(t, cfg, d, 1, prompts)
		t.Logf("tiny seed 1, %d positions: %-8s mean |Δlogit| %.4g, argmax agreement %.3f, KL mean %.3g max %.3g nats", 6*48, d, f.meanAbs, f.agree, f.kl, f.maxKL)
	}
	o := drift(t, cfg, FP32, 2, prompts)
	t.Logf("tiny seed 2 vs seed 1, %d positions: mean |Δlogit| %.4g, argmax agreement %.3f, KL mean %.3g max %.3g nats", 6*48, o.meanAbs, o.agree, o.kl, o.maxKL)
}
