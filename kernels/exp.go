package kernels

import "math"

// exp32 returns e^x in float32 with an error of about 1 ulp, several times
// faster than going through math.Exp. It is the exponential of every kernel
// (softmax, sigmoid, SiLU) on every path.
//
// The float32 conversions round every product before it is added, so no
// build (GOAMD64=v3 fuses a*b+c otherwise) turns them into FMAs: the
// assembly versions (exp_amd64.s) do the same operations and give the same
// bits.
//
// The method is Cephes' expf: x = n·ln2 + r with |r| ≤ ln2/2 (ln2 split in
// two so n·ln2 is exact), e^r by a degree-6 polynomial, then scaled by 2^n.
func exp32(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		ln2Hi = 0.693359375
		ln2Lo = -2.12194440e-4
	)
	// Adding 1.5·2^23 below rounds x·log2e to an integer n (to nearest even)
	// and leaves n in the low mantissa bits of t: no float64 round trip.
	switch {
	case x != x:
		return x
	case x > 88.72283:
		return float32(math.Inf(1))
	case x < -103.97208:
		return 0
	}
	t := float32(x*log2e) + 0x1.8p23
	n := t - 0x1.8p23
	e := int32(math.Float32bits(t)) - 0x4b400000
	r := x - float32(n*ln2Hi)
	r -= float32(n * ln2Lo)
	p := float32(1.9875691500e-4)
	p = float32(p*r) + 1.3981999507e-3
	p = float32(p*r) + 8.3334519073e-3
	p = float32(p*r) + 4.1665795894e-2
	p = float32(p*r) + 1.6666665459e-1
	p = float32(p*r) + 5.0000001201e-1
	y := float32(p*float32(r*r)) + r + 1
	if e < -126 {
		// 2^e is subnormal: scale in two steps so neither factor underflows early.
		return y * math.Float32frombits(uint32(e+126+127)<<23) * 0x1p-126
	}
	if e > 127 {
		return y * 2 * math.Float32frombits(uint32(e-1+127)<<23)
	}
	return y * math.Float32frombits(uint32(e+127)<<23)
}

// expAffine sets dst[i] = exp32(scale·src[i] + bias), the product and the
// sum each rounded to float32, with the path's vector code; every path gives
// the same bits. dst may be src.
func (c *CPU) expAffine(dst, src []float32, scale, bias float32) {
	n := len(src)
	if n == 0 {
		return
	}
	_ = dst[n-1]
	switch c.path {
	case PathAVX512:
		expAVX512(&dst[0], &src[0], n, scale, bias)
	case PathAVX2:
		expAVX2(&dst[0], &src[0], n, scale, bias, avx2Mask(n%8))
	default:
		for i, v := range src {
			dst[i] = exp32(float32(scale*v) + bias)
		}
	}
}
