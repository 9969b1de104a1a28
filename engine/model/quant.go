package model

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// DType is a format the weights are stored in: `glmbench serve
// --weight-dtype`. The engine computes in float32 whatever the format; a
// DType other than FP32 rounds each quantized tensor at load to the values
// the format can hold (with its scales), so the model serves what a
// deployment storing its weights so would, kernels aside.
type DType string

// The weight formats.
const (
	// FP32 keeps the weights as the checkpoint or the preset gives them.
	FP32 DType = "fp32"
	// BF16 is bfloat16: float32's exponent, 7 mantissa bits, rounded to
	// nearest even.
	BF16 DType = "bf16"
	// FP8E4M3 is OCP FP8 E4M3 ("e4m3fn": no infinities, largest finite 448)
	// with one fp32 scale per tensor, amax/448, as FP8 checkpoints with
	// per-tensor scales (vLLM's and ModelOpt's "fp8") store it.
	FP8E4M3 DType = "fp8_e4m3"
	// NVFP4 is NVIDIA's FP4: E2M1 values in blocks of 16 along a row, each
	// block with an E4M3 scale, and one fp32 scale per tensor (ModelOpt's
	// NVFP4, SGLang's "modelopt_fp4").
	NVFP4 DType = "nvfp4"
)

// DTypes are the weight formats, the default first.
var DTypes = []DType{FP32, BF16, FP8E4M3, NVFP4}

// ParseDType reads a weight format by name ("": FP32). The error lists the
// names.
func ParseDType(name string) (DType, error) {
	if name == "" {
		return FP32, nil
	}
	if slices.Contains(DTypes, DType(name)) {
		return DType(name), nil
	}
	names := make([]string, len(DTypes))
	for i, d := range DTypes {
		names[i] = string(d)
	}
	return "", fmt.Errorf("weight dtype %q: want one of %s", name, strings.Join(names, ", "))
}

// Quantized says whether a weight format rounds the tensor of that
// checkpoint name. It rounds every Linear weight — attention, indexer
// (wq_b, wk), dense MLP, routed and shared experts, the MTP layer's eh_proj —
// and keeps in float32 what serving stacks keep in high precision:
// embeddings, norms and biases (vLLM and ModelOpt quantize Linear layers
// only), the router's gate and its e_score_correction_bias, lm_head
// (ModelOpt's default config disables "*lm_head*" and the MoE router
// "*mlp.gate.*"), and the indexer's weights_proj (DeepSeek-V3.2's FP8
// checkpoint stores it in bf16, not fp8). The same set for every format, so
// the drift a format causes is that format's alone.
func Quantized(name string) bool {
	switch {
	case !strings.HasSuffix(name, ".weight"),
		strings.HasSuffix(name, "norm.weight"),
		name == "model.embed_tokens.weight", name == "lm_head.weight",
		strings.HasSuffix(name, ".mlp.gate.weight"),
		strings.HasSuffix(name, ".indexer.weights_proj.weight"):
		return false
	}
	return true
}

// Quantize rounds w's tensors that Quantized names to format d, in place,
// and returns how many it rounded (0 for FP32, which changes nothing). The
// absorbed-MLA matrices are views of kv_b_proj, so they see the rounding.
// A tensor holding a non-finite value is refused for FP8E4M3 and NVFP4,
// whose scales it would poison.
func (w *Weights) Quantize(d DType) (int, error) {
	if _, err := ParseDType(string(d)); err != nil {
		return 0, err
	}
	if d == FP32 || d == "" {
		return 0, nil
	}
	names := make([]string, 0, len(w.byName))
	for name := range w.byName {
		if Quantized(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		t := w.byName[name]
		if err := RoundTensor(d, t); err != nil {
			return 0, fmt.Errorf("%s: %s: %w", d, name, err)
		}
	}
	return len(names), nil
}

// RoundTensor rounds t's data to format d in place: element by element for
// BF16, with one scale for the tensor for FP8E4M3, in 16-element blocks
// along the last dimension for NVFP4.
func RoundTensor(d DType, t Tensor) error {
	switch d {
	case FP32, "":
		return nil
	case BF16:
		for i, x := range t.Data {
			t.Data[i] = RoundBF16(x)
		}
		return nil
	case FP8E4M3:
		_, err := QuantizeFP8(t.Data)
		return err
	case NVFP4:
		cols := 1
		if len(t.Shape) > 0 {
			cols = t.Shape[len(t.Shape)-1]
		}
		_, err := QuantizeNVFP4(t.Data, cols)
		return err
	}
	_, err := ParseDType(string(d))
	return err
}

// RoundBF16 is x stored as bfloat16 and read back: the upper 16 bits of
// float32 after rounding the lower 16 to nearest, ties to even, as PyTorch's
// float32 → bfloat16 cast. Values past bfloat16's largest finite
// (0x7f7f·2^16 ≈ 3.39e38) by half a unit or more become ±Inf; NaN stays NaN
// (its quiet bit set, so that truncation cannot turn it into Inf).
func RoundBF16(x float32) float32 {
	b := math.Float32bits(x)
	if x != x {
		return math.Float32frombits((b | 0x0040_0000) &^ 0xffff)
	}
	b += 0x7fff + (b>>16)&1
	return math.Float32frombits(b &^ 0xffff)
}

// E4M3Max is FP8 E4M3's largest finite value (code 0x7e: 1.75·2^8).
const E4M3Max = 448

// DecodeE4M3 is the value of an OCP FP8 E4M3 ("fn") code: 1 sign bit, 4
// exponent bits (bias 7), 3 mantissa bits; exponent 0 is subnormal
// (m/8·2^-6); 0x7f and 0xff are NaN, and there is no infinity.
func DecodeE4M3(c uint8) float32 {
	e, m := int(c>>3)&0xf, float64(c&7)
	var v float64
	switch {
	case c&0x7f == 0x7f:
		return float32(math.NaN())
	case e == 0:
		v = m / 8 * math.Ldexp(1, -6)
	default:
		v = (1 + m/8) * math.Ldexp(1, e-7)
	}
	if c&0x80 != 0 {
		v = -v
	}
	return float32(v)
}

// e4m3Pos are the values of codes 0x00 … 0x7e, which increase with the code.
var e4m3Pos = func() []float64 {
	v := make([]float64, 0x7f)
	for c := range v {
		v[c] = float64(DecodeE4M3(uint8(c)))
	}
	return v
}()

// EncodeE4M3 is the E4M3 code nearest x, ties to the even code (round to
// nearest even, as CUDA's __nv_cvt_float_to_fp8 with __NV_SATFINITE):
// magnitudes past 448 saturate to ±448, NaN is 0x7f, -0 is 0x80.
func EncodeE4M3(x float64) uint8 {
	if x != x {
		return 0x7f
	}
	var sign uint8
	if math.Signbit(x) {
		sign, x = 0x80, -x
	}
	return sign | nearest(e4m3Pos, x)
}

// nearest is the index of the value of pos (ascending, from 0) nearest
// x ≥ 0, ties to the even index, the last past the end. The midpoint of two
// neighbours is exact in float64 (they have few significant bits), so the
// comparison is too.
func nearest(pos []float64, x float64) uint8 {
	i := sort.SearchFloat64s(pos, x) // first value ≥ x
	switch {
	case i == len(pos):
		return uint8(len(pos) - 1)
	case pos[i] == x || i == 0:
		return uint8(i)
	}
	mid := (pos[i-1] + pos[i]) / 2
	switch {
	case x < mid:
		return uint8(i - 1)
	case x > mid:
		return uint8(i)
	case i%2 == 0:
		return uint8(i)
	}
	return uint8(i - 1)
}

// RoundE4M3 is x stored as FP8 E4M3 and read back.
func RoundE4M3(x float64) float64 { return float64(DecodeE4M3(EncodeE4M3(x))) }

// e2m1Pos are FP4 E2M1's non-negative values, codes 0 … 7: 2 exponent bits
// (bias 1), 1 mantissa bit, code 1 subnormal.
var e2m1Pos = []float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}

// E2M1Max is FP4 E2M1's largest value.
const E2M1Max = 6

// RoundE2M1 is x stored as FP4 E2M1 and read back: the nearest of ±{0, 0.5,
// 1, 1.5, 2, 3, 4, 6}, ties to the even code (0.25 → 0, 0.75 → 1, 2.5 → 2,
// 5 → 4), magnitudes past 6 saturated to 6.
func RoundE2M1(x float64) float64 {
	if x < 0 {
		return -e2m1Pos[nearest(e2m1Pos, -x)]
	}
	return e2m1Pos[nearest(e2m1Pos, x)]
}

// amax is the largest magnitude of data; an error for a non-finite value.
func amax(data []float32) (float64, error) {
	m := 0.0
	for i, x := range data {
		a := math.Abs(float64(x))
		if math.IsNaN(a) || math.IsInf(a, 0) {
			return 0, fmt.Errorf("element %d is %v: no finite scale", i, x)
		}
		m = max(m, a)
	}
	return m, nil
}

// QuantizeFP8 rounds data in place to FP8 E4M3 with one scale for all of
// it: s = amax/448 (fp32), each x becomes e4m3(x/s)·s, so the largest
// magnitude maps to 448 and stays exact. It returns s (0 for all zeros,
// which stay zeros).
func QuantizeFP8(data []float32) (float32, error) {
	m, err := amax(data)
	if err != nil || m == 0 {
		return 0, err
	}
	s := float32(m / E4M3Max)
	for i, x := range data {
		data[i] = float32(RoundE4M3(float64(x)/float64(s)) * float64(s))
	}
	return s, nil
}

// NVFP4Block is the elements an NVFP4 block scale covers, along a row.
const NVFP4Block = 16

// QuantizeNVFP4 rounds data (rows of cols elements) in place to NVFP4, the
// two-level scheme of NVIDIA's ModelOpt and its kernels:
//   - the tensor scale (fp32) is S = amax/(448·6), so that a block holding
//     the tensor's amax gets the largest E4M3 block scale, 448;
//   - each block of 16 consecutive elements of a row (the last one shorter
//     when cols is not a multiple of 16, as zero padding would) gets the
//     block scale b = e4m3(block amax / 6 / S);
//   - each element becomes e2m1(x/(b·S))·b·S, saturated at ±6·b·S (a block
//     scale rounded down can put x/(b·S) a little past 6). A block whose
//     scale underflows E4M3 to 0 becomes zeros.
//
// It returns S (0 for all zeros, which stay zeros).
func QuantizeNVFP4(data []float32, cols int) (float32, error) {
	if cols <= 0 || len(data)%cols != 0 {
		return 0, fmt.Errorf("%d elements are not rows of %d", len(data), cols)
	}
	m, err := amax(data)
	if err != nil || m == 0 {
		return 0, err
	}
	S := float64(float32(m / (E4M3Max * E2M1Max)))
	for r := 0; r < len(data); r += cols {
		row := data[r : r+cols]
		for b0 := 0; b0 < cols; b0 += NVFP4Block {
			blk := row[b0:min(b0+NVFP4Block, cols)]
			bm, _ := amax(blk)
			scale := RoundE4M3(bm/E2M1Max/S) * S
			for i, x := range blk {
				if scale == 0 {
					blk[i] = 0
					continue
				}
				blk[i] = float32(RoundE2M1(float64(x)/scale) * scale)
			}
		}
	}
	return float32(S), nil
}
